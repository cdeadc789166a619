"""A Griffe extension for the API pages: reads the library's docstrings as written.

Two habits of the docstrings that Griffe's Google parser does not read:

- `Example:` followed by a blank line and an unindented doctest (Keras' style). Griffe
  needs `Examples:` with an indented block, else the doctest renders as prose (and its
  output, such as `['a', 'b']`, as broken links). The block up to the next section title
  is indented under `Examples:`.
- A section title with text on its line (`Args: as TransformerEncoderBlock ...`): it is
  prose, so the title is set in bold instead of being parsed as a parameter list.
- `Name.__doc__ = "..."` after `Name = collections.namedtuple(...)`: Griffe reads
  docstrings statically and would show the named tuple undocumented (hence not at all).
"""

import ast
import re
from inspect import cleandoc as inspect_cleandoc

import griffe

_SECTION = re.compile(r"^[A-Z][\w ]*:\s*$")
_TITLE_WITH_TEXT = re.compile(r"^(Args|Arguments|Returns|Raises|Call arguments):[ \t]+(\S.*)$")


def _rewrite(text):
    lines = text.splitlines()
    out, in_example = [], False
    for line in lines:
        if in_example:
            if _SECTION.match(line):
                in_example = False
            else:
                out.append("    " + line if line.strip() else "")
                continue
        if line.strip() in ("Example:", "Examples:") and not line.startswith(" "):
            out.append("Examples:")
            in_example = True
            continue
        match = _TITLE_WITH_TEXT.match(line)
        out.append(f"**{match.group(1)}:** {match.group(2)}" if match else line)
    return "\n".join(out)


class ExampleSections(griffe.Extension):
    def on_module_members(self, *, node, mod, **kwargs):
        if not isinstance(node, ast.Module):
            return
        for statement in node.body:
            if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
                continue
            target, value = statement.targets[0], statement.value
            if (
                isinstance(target, ast.Attribute)
                and target.attr == "__doc__"
                and isinstance(target.value, ast.Name)
                and target.value.id in mod.members
                and isinstance(value, ast.Constant)
                and isinstance(value.value, str)
            ):
                member = mod.members[target.value.id]
                member.docstring = griffe.Docstring(
                    inspect_cleandoc(value.value), lineno=statement.lineno, parent=member
                )

    def on_object(self, *, obj, **kwargs):
        if obj.docstring is not None:
            obj.docstring.value = _rewrite(obj.docstring.value)
