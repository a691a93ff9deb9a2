"""What the console's scripts call: every ``(method, path)`` its JavaScript sends, read from
the source with a real JavaScript parser (tree-sitter), so a test can hold the console to
the management API's OpenAPI document without a browser.

A call is ``api(path, {method})``, ``download(path, …)`` (GET), ``navigate(path, …)`` (the
browser sent to a GET route) or ``fetch(path, {method})`` (lib/api.js). The path argument may
be a literal, a template (``${…}`` becomes ``{}`` unless it names literals), a ternary or
``||`` of paths, a ``const`` holding them, a parameter of the enclosing function (then every
call of that function in its scope says what it is), or ``x.name`` (every ``name: '/…'``
property of the module). A path this cannot tell, and a ``'/api/…'`` literal that no call
uses, are reported: the test fails rather than miss a route."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import tree_sitter_javascript
from tree_sitter import Language, Node, Parser

#: the functions that send a request, and whether their second argument may name the method
SENDERS = {"api": True, "fetch": True, "download": False, "navigate": False}
#: the wrappers in lib/api.js whose own fetch() is the call they make for their callers
WRAPPERS = {"api", "download"}
PREFIXES = ("/api/", "/pg/")
HOLE = "{}"
FUNCTIONS = ("function_declaration", "function_expression", "arrow_function", "method_definition",
             "generator_function_declaration")

_PARSER = Parser(Language(tree_sitter_javascript.language()))


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    where: str


class Unresolved(Exception):
    pass


def _text(node: Node) -> str:
    return (node.text or b"").decode()


def _walk(node: Node) -> Iterator[Node]:
    yield node
    for child in node.named_children:
        yield from _walk(child)


def _string(node: Node) -> str:
    return "".join(_text(c) for c in node.named_children if c.type in ("string_fragment", "escape_sequence"))


def _params(fn: Node) -> list[Node]:
    single = fn.child_by_field_name("parameter")  # `x => …`
    if single is not None:
        return [single]
    params = fn.child_by_field_name("parameters")
    return list(params.named_children) if params is not None else []


def _name_of(fn: Node) -> str | None:
    named = fn.child_by_field_name("name")
    if named is not None:
        return _text(named)
    parent = fn.parent
    if parent is not None and parent.type == "variable_declarator":
        target = parent.child_by_field_name("name")
        return _text(target) if target is not None and target.type == "identifier" else None
    return None


@dataclass
class Module:
    name: str
    root: Node
    used: set[int] = field(default_factory=set)  # the path literals the calls account for

    def where(self, node: Node) -> str:
        return f"{self.name}:{node.start_point[0] + 1}"

    def calls_of(self, function: str, scope: Node) -> list[Node]:
        return [n for n in _walk(scope) if n.type == "call_expression"
                and (f := n.child_by_field_name("function")) is not None and _text(f) == function]

    def constants(self, name: str) -> list[Node]:
        found = []
        for n in _walk(self.root):
            if n.type == "variable_declarator":
                target, value = n.child_by_field_name("name"), n.child_by_field_name("value")
                if target is not None and value is not None and _text(target) == name:
                    found.append(value)
        return found

    def parameter(self, ident: Node) -> tuple[Node, int] | None:
        """The function whose plain parameter ``ident`` names, and its position."""
        name = _text(ident)
        node = ident.parent
        while node is not None:
            if node.type in FUNCTIONS:
                for i, p in enumerate(_params(node)):
                    if p.type == "identifier" and _text(p) == name:
                        return node, i
                    if p.type == "assignment_pattern" and _text(p.child_by_field_name("left") or p) == name:
                        return node, i
            node = node.parent
        return None

    def paths(self, node: Node, seen: frozenset[int] = frozenset(), *, strict: bool = False) -> set[str]:
        """The strings ``node`` may be; ``strict`` (inside a template) takes literals only."""
        if node.id in seen:
            raise Unresolved(f"{self.where(node)}: {_text(node)!r} refers to itself")
        seen = seen | {node.id}
        kind = node.type
        if kind == "string":
            self.used.add(node.id)
            return {_string(node)}
        if kind == "template_string":
            self.used.add(node.id)
            out = {""}
            for part in node.named_children:
                if part.type == "template_substitution":
                    try:
                        choices = self.paths(part.named_children[0], seen, strict=True)
                    except Unresolved:
                        choices = {HOLE}
                else:
                    choices = {_text(part)}
                out = {a + b for a in out for b in choices}
            return out
        if kind == "parenthesized_expression":
            return self.paths(node.named_children[0], seen, strict=strict)
        if kind == "ternary_expression":
            return (self.paths(node.child_by_field_name("consequence") or node, seen, strict=strict)
                    | self.paths(node.child_by_field_name("alternative") or node, seen, strict=strict))
        if kind == "binary_expression":
            op = _text(node.child_by_field_name("operator") or node)
            left = node.child_by_field_name("left") or node
            right = node.child_by_field_name("right") or node
            if op == "||":
                return self.paths(left, seen, strict=strict) | self.paths(right, seen, strict=strict)
            if op == "+":
                tail = {""} if _is_query(right) else self.paths(right, seen, strict=strict)
                return {a + b for a in self.paths(left, seen, strict=strict) for b in tail}
        if kind == "identifier":
            return self._identifier(node, seen, strict)
        if kind == "member_expression" and not strict:
            prop = _text(node.child_by_field_name("property") or node)
            values = [p.child_by_field_name("value") for p in _walk(self.root) if p.type == "pair"
                      and _text(p.child_by_field_name("key") or p).strip("'\"") == prop]
            literals = [v for v in values if v is not None and v.type == "string" and _string(v).startswith("/")]
            if literals:
                return set().union(*(self.paths(v, seen) for v in literals))
        raise Unresolved(f"{self.where(node)}: cannot tell what {_text(node)!r} is")

    def _identifier(self, node: Node, seen: frozenset[int], strict: bool) -> set[str]:
        param = self.parameter(node)
        if param is not None:
            fn, index = param
            name = _name_of(fn)
            if name is None:
                raise Unresolved(f"{self.where(node)}: {_text(node)!r} is a parameter of an unnamed function")
            # the block the function is declared in: its calls are there
            scope = fn.parent
            if scope is not None and scope.type == "variable_declarator":
                scope = scope.parent.parent if scope.parent is not None else None
            out: set[str] = set()
            for call in self.calls_of(name, scope or self.root):
                args = call.child_by_field_name("arguments")
                if args is None or len(args.named_children) <= index:
                    raise Unresolved(f"{self.where(call)}: {name}() without its argument {index + 1}")
                out |= self.paths(args.named_children[index], seen, strict=strict)
            if not out:
                raise Unresolved(f"{self.where(node)}: {name}() is never called here")
            return out
        values = self.constants(_text(node))
        if not values:
            raise Unresolved(f"{self.where(node)}: {_text(node)!r} is not a constant of this module")
        return set().union(*(self.paths(v, seen, strict=strict) for v in values))


def _is_query(node: Node) -> bool:
    fn = node.child_by_field_name("function") if node.type == "call_expression" else None
    return fn is not None and _text(fn) == "query"


def _methods(module: Module, call: Node, sender: str) -> set[str]:
    args = call.child_by_field_name("arguments")
    options = args.named_children[1] if args is not None and len(args.named_children) > 1 else None
    if not SENDERS[sender] or options is None or options.type != "object":
        return {"GET"}
    for pair in options.named_children:
        value = pair.child_by_field_name("value")
        if pair.type == "pair" and value is not None and _text(pair.child_by_field_name("key") or pair) == "method":
            return {m.upper() for m in module.paths(value, strict=True)}
    return {"GET"}


def _inside_wrapper(node: Node) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.type in FUNCTIONS and _name_of(parent) in WRAPPERS:
            return True
        parent = parent.parent
    return False


def console_calls(static: Path) -> tuple[set[Call], list[str]]:
    """Every call the scripts under ``static`` (vendor/ aside) make, and the problems: paths
    that could not be told, literals no call accounts for."""
    calls: set[Call] = set()
    problems: list[str] = []
    for file in sorted(static.rglob("*.js")):
        rel = file.relative_to(static)
        if rel.parts[0] == "vendor":
            continue
        module = Module(str(rel), _PARSER.parse(file.read_bytes()).root_node)
        for node in _walk(module.root):
            fn = node.child_by_field_name("function") if node.type == "call_expression" else None
            sender = _text(fn) if fn is not None else ""
            args = node.child_by_field_name("arguments")
            if sender not in SENDERS or args is None or not args.named_children or _inside_wrapper(node):
                continue
            try:
                methods = _methods(module, node, sender)
                for path in module.paths(args.named_children[0]):
                    if not path.startswith("/"):
                        raise Unresolved(f"{module.where(node)}: {path!r} is not a path of this site")
                    calls.update(Call(m, path.split("?")[0], module.where(node)) for m in methods)
            except Unresolved as exc:
                problems.append(str(exc))
        for node in _walk(module.root):
            if node.type in ("string", "template_string") and node.id not in module.used:
                text = _string(node) if node.type == "string" else _text(node).strip("`")
                parent = node.parent.parent if node.parent is not None else None
                prefix_test = parent is not None and parent.type == "call_expression" and _text(
                    parent.child_by_field_name("function") or parent).endswith(".startsWith")
                if text.startswith(PREFIXES) and not prefix_test:
                    problems.append(f"{module.where(node)}: {text!r} is called by no api()/fetch()/download()")
    return calls, problems
