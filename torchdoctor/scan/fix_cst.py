"""The edits --fix makes, as LibCST node rewrites (comments and formatting kept).

Each function takes the node as it stands after inner edits and returns the new node; it
raises Decline when the edit would not be exact.
"""

from __future__ import annotations

import libcst as cst

# Methods between a tensor and `.numpy()` that keep its values: `.detach()` may go before them.
VALUE_METHODS = frozenset(
    ["cpu", "to", "float", "double", "half", "bfloat16", "long", "int", "bool", "contiguous",
     "clone", "squeeze", "unsqueeze", "flatten", "reshape", "view", "permute", "t"]
)  # fmt: skip


class Decline(Exception):
    """This edit is not certain: report the finding, do not make the edit."""


def _comma(ws: cst.BaseParenthesizableWhitespace) -> cst.Comma:
    return cst.Comma(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=ws)


def add_keyword(call: cst.Call, name: str, value: str) -> cst.Call:
    """`f(a)` -> `f(a, name=value)`; one argument per line and trailing commas stay so."""
    if any(a.keyword is not None and a.keyword.value == name for a in call.args):
        raise Decline(f"`{name}=` is already there")
    if any(a.star == "**" for a in call.args):
        raise Decline("`**kwargs` may already carry it")
    new = cst.Arg(
        value=cst.parse_expression(value),
        keyword=cst.Name(name),
        equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
        ),
    )
    args = list(call.args)
    if not args:
        return call.with_changes(args=[new])
    last = args[-1]
    if isinstance(last.comma, cst.Comma):  # trailing comma: the new argument keeps it
        ws = last.comma.whitespace_after
        before = args[-2].comma.whitespace_after if len(args) > 1 else call.whitespace_before_args  # type: ignore[union-attr]
        if isinstance(ws, cst.ParenthesizedWhitespace) and isinstance(
            before, cst.ParenthesizedWhitespace
        ):  # one argument per line: a comment stays on its line, `)` keeps its indentation
            keep: cst.BaseParenthesizableWhitespace = ws.with_changes(
                indent=before.indent, last_line=before.last_line
            )
            close = ws.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
        else:
            keep, close = cst.SimpleWhitespace(" "), ws
        args[-1] = last.with_changes(comma=_comma(keep))
        args.append(new.with_changes(comma=_comma(close)))
    else:  # what followed the last argument (a comment, the line break) now follows the new one
        args[-1] = last.with_changes(
            comma=_comma(cst.SimpleWhitespace(" ")), whitespace_after_arg=cst.SimpleWhitespace("")
        )
        args.append(new.with_changes(whitespace_after_arg=last.whitespace_after_arg))
    return call.with_changes(args=args)


def cuda_to_device(call: cst.Call, device: str) -> cst.Call:
    """`x.cuda()` / `x.cuda(non_blocking=True)` -> `x.to(device[, non_blocking=True])`."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "cuda"):
        raise Decline("not a `.cuda()` method call")
    if any(a.keyword is None or a.keyword.value != "non_blocking" for a in call.args):
        raise Decline("`.cuda(...)` with arguments other than non_blocking")
    first = cst.Arg(cst.Name(device))
    if call.args:
        first = first.with_changes(comma=_comma(cst.SimpleWhitespace(" ")))
    return call.with_changes(func=func.with_changes(attr=cst.Name("to")), args=[first, *call.args])


def detach_before_numpy(call: cst.Call) -> cst.Call:
    """`model(x).cpu().numpy()` -> `model(x).detach().cpu().numpy()`: `.detach()` goes on the
    tensor itself, before the value-keeping methods, never inside a call's receiver."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "numpy"):
        raise Decline("not a `.numpy()` method call")

    def detach(node: cst.BaseExpression) -> cst.BaseExpression:
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in VALUE_METHODS
        ):
            return node.with_changes(func=node.func.with_changes(value=detach(node.func.value)))
        return cst.Call(func=cst.Attribute(value=node, attr=cst.Name("detach")))

    return call.with_changes(func=func.with_changes(value=detach(func.value)))


def replace_expression(node: cst.BaseExpression, code: str) -> cst.BaseExpression:
    """Another expression in the same place, keeping the original's parentheses."""
    new = cst.parse_expression(code)
    return new.with_changes(lpar=node.lpar, rpar=node.rpar)  # type: ignore[attr-defined]
