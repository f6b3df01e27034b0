"""tree-sitter-bash, loaded on the first parse (never at import: ``smoke
--help`` and an agent that runs no command do not pay for it), and the
grammar's node types the walker knows.

``KIND[node.kind_id]`` is the node's type: reading ``kind_id`` costs a third
of reading ``type`` (measured), and the walk reads it for every node.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Language, Parser

#: node kind id -> node type; filled by :func:`parser` (ERROR nodes have id 65535)
KIND: list[str] = []
_language: list[Language] = []
_tls = threading.local()
_lock = threading.Lock()

#: Statement nodes. Anything else is walked as unknown: an allow rule never
#: trusts it (``opaque``) and a deny rule still sees the commands inside it.
STATEMENT_TYPES = frozenset(
    ["program", "list", "pipeline", "subshell", "compound_statement", "redirected_statement", "negated_command", "if_statement", "elif_clause", "else_clause", "while_statement", "for_statement", "c_style_for_statement", "do_group", "case_statement", "case_item", "function_definition", "command", "declaration_command", "unset_command", "variable_assignment", "variable_assignments", "test_command", "comment", "ERROR"]
)
WORD_TYPES = frozenset(
    ["word", "number", "raw_string", "ansi_c_string", "string", "string_content", "translated_string", "concatenation", "simple_expansion", "expansion", "command_substitution", "process_substitution", "arithmetic_expansion", "brace_expression", "array", "extglob_pattern", "regex", "test_operator", "variable_name", "special_variable_name", "file_descriptor", "command_name"]
)
REDIRECT_TYPES = frozenset(
    ["file_redirect", "heredoc_redirect", "herestring_redirect", "heredoc_start", "heredoc_body", "heredoc_content", "heredoc_end"]
)
EXPRESSION_TYPES = frozenset(
    ["binary_expression", "unary_expression", "ternary_expression", "postfix_expression", "parenthesized_expression", "subscript"]
)
HANDLED_NODE_TYPES = STATEMENT_TYPES | WORD_TYPES | REDIRECT_TYPES | EXPRESSION_TYPES


class GrammarMissing(RuntimeError):
    """tree-sitter or tree-sitter-bash is not installed."""


def language() -> Language:
    """The bash grammar (loaded once)."""
    if not _language:
        with _lock:
            if not _language:
                try:
                    import tree_sitter
                    import tree_sitter_bash
                except ImportError as exc:  # a broken install: smoke-core depends on both
                    raise GrammarMissing(
                        f"the shell grammar is not installed ({exc}); commands cannot be checked. "
                        f"Reinstall smoke-core (pip install --force-reinstall smoke-core)"
                    ) from None
                lang = tree_sitter.Language(tree_sitter_bash.language())
                kinds = [lang.node_kind_for_id(i) or "" for i in range(lang.node_kind_count)]
                kinds += ["<unknown>"] * (65535 - len(kinds)) + ["ERROR"]
                KIND[:] = kinds
                _language.append(lang)
    return _language[0]


def parser() -> Parser:
    """A parser for this thread (tree-sitter parsers are not thread-safe)."""
    p: Parser | None = getattr(_tls, "parser", None)
    if p is None:
        import tree_sitter

        p = _tls.parser = tree_sitter.Parser(language())
    return p
