"""Label and field selectors, parsed as kube-apiserver parses `labelSelector`/`fieldSelector`.

Pure functions only: the server parses once per request and calls `.matches` per object, so
parse errors surface as a 400 before any object is touched.

Label selector grammar (k8s.io/apimachinery labels): comma-separated requirements, all ANDed:
`k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k` (exists), `!k` (does not exist),
and the rarely used `k>n` / `k<n` (integer comparisons). `!=` and `notin` also match objects
that lack the key, as on a real server.

Field selectors are `path=value`, `path==value`, `path!=value` on dotted paths into the object
(`metadata.name`, `spec.nodeName`, `involvedObject.name`); a missing path compares as "".
Which paths a resource supports is the server's decision, not this module's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ascendjob_controller.localcluster.goquote import go_quote
from ascendjob_controller.localcluster.metadata_rules import (
    label_value_errors,
    qualified_name_errors,
)


class SelectorError(ValueError):
    """A selector that a real API server would answer with 400 BadRequest."""


# --- label syntax validation ---------------------------------------------------------------
# The rules are ObjectMeta's (metadata_rules); a selector joins one key's or value's problems
# with "; " into one error, as apimachinery's NewRequirement does.


def _validate_key(key: str) -> None:
    problems = qualified_name_errors(key)
    if problems:
        raise SelectorError(
            f"unable to parse requirement: <nil>: Invalid value: {go_quote(key)}: "
            f"{'; '.join(problems)}"
        )


def _validate_value(key: str, index: int, value: str) -> None:
    """`index` is the value's place among the requirement's values, sorted (a set's order)."""
    problems = label_value_errors(value)
    if problems:
        raise SelectorError(
            f"unable to parse requirement: values[{index}][{key}]: Invalid value: "
            f"{go_quote(value)}: {'; '.join(problems)}"
        )


# --- label selector ------------------------------------------------------------------------


@dataclass(frozen=True)
class Requirement:
    """One ANDed term of a label selector. `op` is one of
    "=", "!=", "in", "notin", "exists", "!", "gt", "lt"."""

    key: str
    op: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and labels[self.key] in self.values
        if self.op in ("!=", "notin"):
            return not present or labels[self.key] not in self.values
        # gt / lt: both sides must be integers, otherwise no match (as upstream).
        if not present:
            return False
        try:
            have = int(labels[self.key])
        except ValueError:
            return False
        want = int(self.values[0])
        return have > want if self.op == "gt" else have < want


@dataclass(frozen=True)
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        view: Mapping[str, str] = labels or {}
        return all(r.matches(view) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements


# Token kinds of the label selector lexer.
_ID, _OP, _LPAREN, _RPAREN, _COMMA, _NOT, _END = "id", "op", "(", ")", ",", "!", "end"
_SPECIAL = set("=!(),<>")


def _lex(s: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c.isspace():
            i += 1
            continue
        if c == "(":
            tokens.append((_LPAREN, c))
            i += 1
        elif c == ")":
            tokens.append((_RPAREN, c))
            i += 1
        elif c == ",":
            tokens.append((_COMMA, c))
            i += 1
        elif c in "=!<>":
            two = s[i : i + 2]
            if two in ("==", "!="):
                tokens.append((_OP, two))
                i += 2
            elif c == "!":
                tokens.append((_NOT, c))
                i += 1
            else:
                tokens.append((_OP, c))
                i += 1
        else:
            j = i
            while j < n and not s[j].isspace() and s[j] not in _SPECIAL:
                j += 1
            tokens.append((_ID, s[i:j]))
            i = j
    tokens.append((_END, ""))
    return tokens


def _shown(tok: tuple[str, str]) -> str:
    return "end of string" if tok[0] == _END else tok[1]


class _LabelParser:
    def __init__(self, s: str) -> None:
        self.tokens = _lex(s)
        self.pos = 0

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.pos]

    def take(self) -> tuple[str, str]:
        tok = self.tokens[self.pos]
        if tok[0] != _END:
            self.pos += 1
        return tok

    def parse(self) -> LabelSelector:
        reqs: list[Requirement] = []
        while True:
            tok = self.peek()
            if tok[0] == _END:
                break
            if tok[0] not in (_ID, _NOT):
                raise SelectorError(
                    f"found '{_shown(tok)}', expected: !, identifier, or 'end of string'"
                )
            try:
                reqs.append(self.requirement())
            except SelectorError as err:
                prefix = "unable to parse requirement: "
                text = str(err) if str(err).startswith(prefix) else prefix + str(err)
                raise SelectorError(text) from None
            after = self.take()
            if after[0] == _END:
                break
            if after[0] != _COMMA:
                raise SelectorError(f"found '{_shown(after)}', expected: ',' or 'end of string'")
            if self.peek()[0] == _END:
                raise SelectorError("found 'end of string', expected: identifier")
        return LabelSelector(tuple(reqs))

    def requirement(self) -> Requirement:
        negated = False
        if self.peek()[0] == _NOT:
            self.take()
            negated = True
        key_tok = self.take()
        if key_tok[0] != _ID:
            raise SelectorError(f"found '{_shown(key_tok)}', expected: identifier")
        key = key_tok[1]
        _validate_key(key)
        nxt = self.peek()
        if negated:
            if nxt[0] not in (_END, _COMMA):
                raise SelectorError(f"found '{_shown(nxt)}', expected: ',' or 'end of string'")
            return Requirement(key, "!")
        if nxt[0] in (_END, _COMMA):
            return Requirement(key, "exists")
        op_tok = self.take()
        if op_tok[0] == _OP:
            op = {"=": "=", "==": "=", "!=": "!=", ">": "gt", "<": "lt"}[op_tok[1]]
        elif op_tok[0] == _ID and op_tok[1] in ("in", "notin"):
            op = op_tok[1]
        else:
            raise SelectorError(f"found '{_shown(op_tok)}', expected: in, notin, =, ==, !=, gt, lt")
        values = self.value_set() if op in ("in", "notin") else (self.single_value(),)
        if op in ("gt", "lt"):
            try:
                int(values[0])
            except ValueError:
                raise SelectorError(
                    f"unable to parse requirement: for 'Gt', 'Lt' operators, the value must be "
                    f"an integer: {values[0]!r}"
                ) from None
        else:
            for i, v in enumerate(sorted(set(values))):
                _validate_value(key, i, v)
        return Requirement(key, op, values)

    def single_value(self) -> str:
        tok = self.peek()
        if tok[0] == _ID:
            self.take()
            return tok[1]
        if tok[0] in (_END, _COMMA):
            return ""  # "a=" selects the empty value, as upstream
        raise SelectorError(f"found '{_shown(tok)}', expected: identifier")

    def value_set(self) -> tuple[str, ...]:
        tok = self.take()
        if tok[0] != _LPAREN:
            raise SelectorError(f"found '{_shown(tok)}', expected: '('")
        values: list[str] = []
        expect_value = True
        while True:
            tok = self.take()
            if tok[0] == _RPAREN:
                if expect_value and values:
                    values.append("")  # "(a,)" has an empty trailing value upstream
                elif expect_value and not values:
                    values.append("")  # "()" is the set {""}
                break
            if tok[0] == _ID and expect_value:
                values.append(tok[1])
                expect_value = False
            elif tok[0] == _COMMA:
                if expect_value:
                    values.append("")
                expect_value = True
            else:
                raise SelectorError(f"found '{_shown(tok)}', expected: ',', ')' or identifier")
        return tuple(values)


def parse_label_selector(s: str | None) -> LabelSelector:
    """Parse a `labelSelector` query parameter; "" (or None) selects everything."""
    if not s or not s.strip():
        return LabelSelector()
    return _LabelParser(s).parse()


def label_selector_from_dict(selector: Mapping[str, Any] | None) -> LabelSelector:
    """A metav1.LabelSelector (matchLabels / matchExpressions) as a LabelSelector.

    Useful for objects that carry selectors (Services, PodGroups); None selects everything.
    """
    if not selector:
        return LabelSelector()
    reqs: list[Requirement] = []
    for k, v in sorted((selector.get("matchLabels") or {}).items()):
        reqs.append(Requirement(str(k), "=", (str(v),)))
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
    for expr in selector.get("matchExpressions") or []:
        op = ops.get(expr.get("operator", ""))
        if op is None:
            raise SelectorError(f"{expr.get('operator')!r} is not a valid label selector operator")
        reqs.append(Requirement(str(expr.get("key", "")), op, tuple(expr.get("values") or ())))
    return LabelSelector(tuple(reqs))


# --- field selector ------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    op: str  # "=" or "!="
    value: str

    def matches(self, obj: Mapping[str, Any]) -> bool:
        have = field_value(obj, self.field)
        return (have == self.value) if self.op == "=" else (have != self.value)


@dataclass(frozen=True)
class FieldSelector:
    requirements: tuple[FieldRequirement, ...] = ()

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return all(r.matches(obj) for r in self.requirements)

    @property
    def fields(self) -> tuple[str, ...]:
        """The paths used, so the server can reject ones a resource does not support."""
        return tuple(r.field for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The string form of obj at a dotted path, "" when absent, as a field selector sees it."""
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, Mapping) or part not in cur:
            return ""
        cur = cur[part]
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def _split_unescaped(s: str, sep: str) -> list[str]:
    """Split on `sep` not preceded by a backslash; escapes are kept for a later unescape."""
    parts: list[str] = []
    cur: list[str] = []
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            cur.append(s[i : i + 2])
            i += 2
            continue
        if c == sep:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur))
    return parts


def _unescape_value(raw: str, whole: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == "\\":
            if i + 1 >= len(raw) or raw[i + 1] not in "\\,=":
                raise SelectorError(f"invalid field selector: {whole!r}: invalid escape sequence")
            out.append(raw[i + 1])
            i += 2
            continue
        if c in ",=":
            raise SelectorError(f"invalid field selector: {whole!r}: unescaped {c!r} in value")
        out.append(c)
        i += 1
    return "".join(out)


def parse_field_selector(s: str | None) -> FieldSelector:
    """Parse a `fieldSelector` query parameter; "" (or None) selects everything."""
    if not s or not s.strip():
        return FieldSelector()
    reqs: list[FieldRequirement] = []
    for term in _split_unescaped(s, ","):
        if not term.strip():
            continue
        req = _parse_field_term(term, s)
        reqs.append(req)
    return FieldSelector(tuple(reqs))


def _parse_field_term(term: str, whole: str) -> FieldRequirement:
    for token, op in (("!=", "!="), ("==", "="), ("=", "=")):
        idx = _find_unescaped(term, token)
        if idx >= 0:
            field = term[:idx].strip()
            value = _unescape_value(term[idx + len(token) :], whole)
            if not field:
                break
            return FieldRequirement(field, op, value)
    raise SelectorError(f"invalid selector: '{whole}'; can't understand '{term}'")


def _find_unescaped(s: str, token: str) -> int:
    i = 0
    while i < len(s):
        if s[i] == "\\":
            i += 2
            continue
        if s.startswith(token, i):
            return i
        i += 1
    return -1
