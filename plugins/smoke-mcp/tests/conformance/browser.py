"""The conformance adapter's web browser (``BROWSER`` for Python's
``webbrowser``): it loads the authorization URL Smoke opens and follows the
redirects, as a browser does once the person has approved — the suite's
authorization servers approve at once and redirect to Smoke's listener on
127.0.0.1. Standard library only."""

import sys
import urllib.error
import urllib.request

try:
    with urllib.request.urlopen(sys.argv[1], timeout=30) as response:
        response.read()
except urllib.error.HTTPError as exc:  # the page is the server's: what it says is graded there
    print(f"browser: {exc}", file=sys.stderr)
except OSError as exc:
    print(f"browser: {exc}", file=sys.stderr)
    sys.exit(1)
