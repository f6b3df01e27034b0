import unittest

from stats import mean, median, mode


class MeanTests(unittest.TestCase):
    def test_mean(self):
        self.assertEqual(mean([1, 2, 3, 4]), 2.5)

    def test_empty(self):
        with self.assertRaises(ValueError):
            mean([])


class MedianTests(unittest.TestCase):
    def test_sorted_input(self):
        self.assertEqual(median([1, 2, 3]), 2)

    def test_unsorted_input(self):
        self.assertEqual(median([3, 1, 2]), 2)

    def test_even_unsorted(self):
        self.assertEqual(median([10, 2, 8, 4]), 6)


class ModeTests(unittest.TestCase):
    def test_mode(self):
        self.assertEqual(mode([1, 2, 2, 3]), 2)

    def test_tie_takes_smallest(self):
        self.assertEqual(mode([3, 1, 3, 1]), 1)


if __name__ == "__main__":
    unittest.main()
