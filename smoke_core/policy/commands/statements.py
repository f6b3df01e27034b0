"""The walk over statements: lists, pipelines, groups, subshells, ``if`` /
``for`` / ``while`` / ``case`` bodies, functions, assignments and
declarations, ``[ … ]`` tests, arithmetic; each simple command goes to
:mod:`.simple`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import grammar
from .base import WalkerBase
from .model import DynamicWord
from .variables import ASSIGNMENT, COMMAND_VARS, NUMBER, PROMPT_VARS, is_dangerous_var
from .words import Part, tokens_from_parts

if TYPE_CHECKING:
    from tree_sitter import Node

_ARITH_CMP = frozenset(["-eq", "-ne", "-lt", "-le", "-gt", "-ge"])
_DECLARATIONS = ("export", "declare", "typeset", "local", "readonly")
_EXPRESSIONS = ("binary_expression", "unary_expression", "parenthesized_expression",
                "ternary_expression", "postfix_expression")

#: node type -> the walker method for it
STATEMENT_METHODS = {
    "program": "children", "list": "children", "pipeline": "children", "subshell": "children",
    "compound_statement": "s_compound", "redirected_statement": "s_redirected",
    "negated_command": "children", "if_statement": "children", "elif_clause": "children",
    "else_clause": "children", "while_statement": "s_loop", "do_group": "children",
    "for_statement": "s_loop", "c_style_for_statement": "s_loop", "case_statement": "s_case",
    "case_item": "children", "function_definition": "s_function", "command": "s_command",
    "declaration_command": "s_declaration", "unset_command": "s_unset",
    "variable_assignment": "s_assignment", "variable_assignments": "s_assignments",
    "test_command": "s_test", "comment": "s_comment", "ERROR": "s_error",
}


class StatementWalker(WalkerBase):
    #: node type -> method, built from STATEMENT_METHODS by the final walker class
    DISPATCH: dict[str, object] = {}

    def stmt(self, node: Node) -> None:
        t = grammar.KIND[node.kind_id]
        method = self.DISPATCH.get(t)
        if method is not None:
            method(self, node)  # type: ignore[operator]
        elif not node.is_named:
            return
        elif t in grammar.WORD_TYPES:
            self.word_parts(node, [])
        elif t in grammar.REDIRECT_TYPES:
            self.redirect(node, None)
        elif t in grammar.EXPRESSION_TYPES:
            self.expr(node, arith=False)
        else:
            self.unknown(node)

    def unknown(self, node: Node) -> None:
        self.st.add_opaque(f"unhandled node type {grammar.KIND[node.kind_id]!r}")
        for c in node.children:
            self.stmt(c)

    def children(self, node: Node) -> None:
        for c in node.children:
            if c.is_named:
                self.stmt(c)

    def s_comment(self, node: Node) -> None:
        pass

    def s_error(self, node: Node) -> None:
        kind = grammar.KIND
        self.st.add_error("syntax error")
        ch = node.children
        skip = None
        for i, c in enumerate(ch):
            if c is skip:
                continue
            if (kind[c.kind_id] == "{" and i + 1 < len(ch) and kind[ch[i + 1].kind_id] == "command"
                    and ch[i + 1].start_byte == c.end_byte):
                # `{rm,x} v` parses as ERROR('{') + a command: rebuild the word
                skip = ch[i + 1]
                self.s_command(skip, prefix=c)
            elif c.is_named:
                self.stmt(c)

    def s_compound(self, node: Node) -> None:
        ch = node.children
        if ch and grammar.KIND[ch[0].kind_id] == "((":
            self.expr(node, arith=True)
            return
        self.children(node)

    def s_function(self, node: Node) -> None:
        name = node.child_by_field_name("name")
        self.st.add_opaque(f"function definition {self.text(name) if name else ''}".strip())
        self.st.loop += 1
        for c in node.children:
            if c.is_named and c != name and grammar.KIND[c.kind_id] != "word":
                self.stmt(c)
        self.st.loop -= 1

    def s_loop(self, node: Node) -> None:
        self.st.loop += 1
        try:
            t = grammar.KIND[node.kind_id]
            if t == "for_statement":
                self._for(node)
            elif t == "c_style_for_statement":
                for c in node.children:
                    if c.is_named:
                        if grammar.KIND[c.kind_id] in ("do_group", "compound_statement"):
                            self.stmt(c)
                        else:
                            self.expr(c, arith=True)
            else:
                self.children(node)
        finally:
            self.st.loop -= 1

    def _for(self, node: Node) -> None:
        for c in node.children:
            if not c.is_named:
                continue
            t = grammar.KIND[c.kind_id]
            if t == "variable_name":
                self.note_assign(self.text(c), "<loop>", "for-loop variable")
            elif t in grammar.WORD_TYPES:
                self.word_parts(c, [])
            else:
                self.stmt(c)

    def s_case(self, node: Node) -> None:
        for c in node.children:
            if c.is_named:
                if grammar.KIND[c.kind_id] == "case_item":
                    self.children(c)  # patterns are words; bodies are statements
                else:
                    self.stmt(c)

    def s_redirected(self, node: Node) -> None:
        kind = grammar.KIND
        body = None
        redirects = []
        for c in node.children:
            if not c.is_named:
                continue
            if kind[c.kind_id] in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                redirects.append(c)
            elif body is None:
                body = c
            else:
                self.stmt(c)
        feeds: list[str] = []
        extra: list[Node] = []
        for r in redirects:
            self.redirect(r, feeds, extra)
        if body is None:
            return
        target = body
        while kind[target.kind_id] in ("list", "pipeline") and target.named_child_count:
            target = target.named_children[-1]
        if kind[target.kind_id] == "command" and target != body and (feeds or extra):
            # `a && bash <<EOF`: the grammar binds the redirection to the list,
            # bash binds it to the last simple command
            self.st.pending[target.id] = (feeds, extra)
            self.stmt(body)
        elif kind[body.kind_id] == "command":
            self.s_command(body, feeds, extra)
        else:
            if extra:
                self.st.add_opaque("words after a redirection of a compound command")
                for e in extra:
                    self.word_parts(e, [])
            self.stmt(body)

    # ------------------------------------------------------------ assignments

    def note_assign(self, name: str, value: str, where: str) -> None:
        self.st.assignments.append((name, value))
        if is_dangerous_var(name):
            self.st.add_opaque(f"assignment to {name} ({where})")
        upper = name.upper()
        if value and value != "<loop>":
            if upper in COMMAND_VARS or upper.startswith("BASH_FUNC_"):
                self.nested(value.lstrip("|"))
            elif upper in PROMPT_VARS:
                self.heredoc_expansions(value)

    def assignment(self, node: Node, where: str) -> tuple[str, str]:
        name = ""
        value_parts: list[Part] = []
        for c in node.children:
            t = grammar.KIND[c.kind_id]
            if t == "variable_name":
                name = self.text(c)
            elif t == "subscript":
                named = c.child_by_field_name("name")
                name = self.text(named) if named else self.text(c)
                index = c.child_by_field_name("index")
                if index is not None:
                    if not self.is_literal_index(index):
                        self.st.add_opaque("array subscript evaluated arithmetically")
                    self.word_parts(index, [])
            elif c.is_named:
                self.word_parts(c, value_parts)
        value = "".join(p for p, _ in value_parts)
        self.note_assign(name, value, where)
        return name, value

    def s_assignment(self, node: Node) -> None:
        self.assignment(node, "statement")

    def s_assignments(self, node: Node) -> None:
        for c in node.children:
            if grammar.KIND[c.kind_id] == "variable_assignment":
                self.assignment(c, "statement")
            elif c.is_named:
                self.stmt(c)

    def s_declaration(self, node: Node) -> None:
        argv: list[str] = []
        flags = ""
        for c in node.children:
            t = grammar.KIND[c.kind_id]
            where = argv[0] if argv else "declare"
            if not c.is_named:
                if t in _DECLARATIONS:
                    argv.append(t)
                continue
            if t == "variable_assignment":
                name, value = self.assignment(c, where)
                argv.append(f"{name}={value}")
            elif t == "variable_name":
                name = self.text(c)
                argv.append(name)
                if is_dangerous_var(name):
                    self.st.add_opaque(f"{where} {name}")
            else:
                parts: list[Part] = []
                self.word_parts(c, parts)
                tokens, _ = tokens_from_parts(parts)
                for tok in tokens:
                    m = ASSIGNMENT.match(tok)
                    if type(tok) is DynamicWord and not m:
                        # `export "$V"` with V=PATH=/tmp/x: the name is known only at run time
                        self.st.add_opaque(f"{where} of a name from an expansion: {tok}")
                    elif tok.startswith(("-", "+")):
                        flags += tok[1:]
                    elif m:
                        self.note_assign(m.group(1), m.group(3), where)
                    elif is_dangerous_var(tok):
                        self.st.add_opaque(f"{where} {tok}")
                argv.extend(tokens)
        if "n" in flags:
            self.st.add_opaque("nameref declaration (declare -n)")
        if "i" in flags:
            self.st.add_opaque("integer declaration evaluates arithmetic (declare -i)")
        if "f" in flags and argv[:1] == ["export"]:
            self.st.add_opaque("export -f exports a function")
        self.plain(argv)

    def s_unset(self, node: Node) -> None:
        argv = ["unset"]
        for c in node.children:
            if c.is_named:
                parts: list[Part] = []
                self.word_parts(c, parts)
                argv.extend(tokens_from_parts(parts)[0])
        if any("[" in a for a in argv[1:]):
            self.st.add_opaque("array subscript evaluated arithmetically")
        self.plain(argv)

    # ------------------------------------------------------------ [ … ] and [[ … ]]

    def s_test(self, node: Node) -> None:
        argv: list[str] = []
        double = bool(node.children) and grammar.KIND[node.children[0].kind_id] == "[["
        self._flatten_test(node, argv, double)
        self.plain(argv)

    def _flatten_test(self, node: Node, argv: list[str], double: bool) -> None:
        for c in node.children:
            t = grammar.KIND[c.kind_id]
            if not c.is_named:
                argv.append(t)
            elif t in _EXPRESSIONS:
                op = c.child_by_field_name("operator")
                if double and t == "binary_expression" and op is not None and self.text(op) in _ARITH_CMP:
                    for side in ("left", "right"):
                        s = c.child_by_field_name(side)
                        if s is not None and not NUMBER.match(self.text(s)):
                            self.st.add_opaque("arithmetic comparison in [[ ]] evaluates operands")
                if double and t == "unary_expression" and op is not None and self.text(op) == "-v":
                    self.st.add_opaque("[[ -v ]] may evaluate a subscript")
                self._flatten_test(c, argv, double)
            elif t in ("test_operator", "regex", "extglob_pattern"):
                argv.append(self.text(c))
            else:
                parts: list[Part] = []
                self.word_parts(c, parts)
                tokens, _ = tokens_from_parts(parts, want_brace=not double)
                argv.extend(tokens if tokens else [""])

    # ------------------------------------------------------------ arithmetic

    def expr(self, node: Node, arith: bool) -> None:
        """Walk an expression; in arithmetic anything but numbers and operators
        is opaque (bash evaluates a variable's value as an expression, recursively)."""
        kind = grammar.KIND
        stack = [node]
        while stack:
            n = stack.pop()
            t = kind[n.kind_id]
            if t in ("command_substitution", "process_substitution"):
                self.word_parts(n, [])
                continue
            if t in ("simple_expansion", "expansion", "arithmetic_expansion", "string",
                     "concatenation", "raw_string", "ansi_c_string"):
                if arith:
                    self.st.add_opaque("arithmetic evaluation of a variable or string")
                self.word_parts(n, [])
                continue
            if arith and t in ("variable_name", "word", "subscript", "special_variable_name") and not (
                    t == "word" and NUMBER.match(self.text(n))):
                self.st.add_opaque("arithmetic evaluation of a variable or string")
            if t == "variable_assignment" and arith:
                self.st.add_opaque("arithmetic evaluation of a variable or string")
            if n.is_named and t not in grammar.HANDLED_NODE_TYPES:
                self.st.add_opaque(f"unhandled node type {t!r}")
            stack.extend(n.children)
