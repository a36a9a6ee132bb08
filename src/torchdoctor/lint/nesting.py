"""How deeply a source's expressions nest, read from its tokens before it is parsed.

A generated file can hold one long expression (`x = 1 + 1 + ... + 1`, a list nested a thousand
deep) whose syntax tree is as deep as the expression is long. libcst's parser and its visitors
recurse once or more per level: such a file raises a RecursionError (with a traceback as long as
the file) or overflows the C stack and kills the process. So a file is measured first, by the
tokenizer, which reads it in one linear pass without recursing, and one nested deeper than
:data:`MAX_NESTING` levels is skipped with a note instead of parsed.

The measure is an upper bound of the syntax tree's depth: each indented block and each open
bracket is a level, and each operator that chains (`a + b + c` nests as `(a + b) + c`, `a.b.c` as
`(a.b).c`, `f(x)(y)` as `(f(x))(y)`, `lambda: lambda: 1` as `lambda: (lambda: 1)`) adds one within
its bracket, counted again from nought after a `,` or `;` there (the items of a list are side by
side, not nested).
"""

from __future__ import annotations

import io
import tokenize

#: Levels of nesting read; libcst reads about twice as deep on Python's default recursion limit.
MAX_NESTING = 100
_CHAINING_OPS = frozenset({"+", "-", "*", "/", "//", "%", "**", "@", "&", "|", "^", "<<", ">>", ".", "~"})
_CHAINING_WORDS = frozenset({"and", "or", "not", "else", "lambda", "await"})
_SEPARATORS = frozenset({",", ";"})
#: Tokens after which an open bracket is a call or a subscript of what came before.
_TRAILED = frozenset({tokenize.NAME, tokenize.NUMBER, tokenize.STRING, ")", "]", "}"})


def nesting_depth(source: str | bytes) -> int:
    """The deepest nesting of any statement of `source` (see the module docstring); 0 when the
    tokenizer stops on an error (the parser then reports the syntax error itself)."""
    data = source.encode("utf-8") if isinstance(source, str) else source
    deepest, levels, indent = 0, [0], 0  # operators chained so far at each open bracket level
    previous: int | str = tokenize.ENCODING
    try:
        for token in tokenize.tokenize(io.BytesIO(data).readline):
            if token.type in (tokenize.INDENT, tokenize.DEDENT):
                indent += 1 if token.type == tokenize.INDENT else -1
            elif token.type == tokenize.NEWLINE:
                levels = [0]
            elif token.type == tokenize.OP and token.string in "([{":
                if previous in _TRAILED and token.string != "{":  # a call or subscript chains: f(x)(y)[0]
                    levels[-1] += 1
                levels.append(0)
            elif token.type == tokenize.OP and token.string in ")]}":
                levels = levels[:-1] or [0]
            elif token.type == tokenize.OP and token.string in _SEPARATORS:
                levels[-1] = 0
            elif token.string in _CHAINING_OPS or (token.type == tokenize.NAME and token.string in _CHAINING_WORDS):
                levels[-1] += 1
            deepest = max(deepest, indent + len(levels) + sum(levels))
            previous = token.string if token.type == tokenize.OP else token.type
    except (tokenize.TokenError, SyntaxError):
        return 0
    return deepest


def too_deep(source: str | bytes) -> str | None:
    """Why `source` is not parsed (it nests deeper than :data:`MAX_NESTING`), or None."""
    depth = nesting_depth(source)
    if depth <= MAX_NESTING:
        return None
    return f"too deeply nested to parse (an expression nests {depth} levels, at most {MAX_NESTING} are read); skipped"
