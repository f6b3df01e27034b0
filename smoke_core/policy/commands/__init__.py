"""Shell commands as the permission rules see them: parsed with tree-sitter-bash
into normalised simple commands (:func:`parse_command`), rule patterns over
argv (:mod:`.patterns`) and the deny / ask / allow decision over a parse
(:mod:`.decide`). docs/security.md is the reference.
"""
