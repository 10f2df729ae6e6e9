"""Writes mnemo/types.py from the API's OpenAPI document.

Every schema of `components.schemas` becomes a TypedDict (an object), a
Literal (an enumeration) or a union (a tagged `oneOf`), with the schema's
description as its docstring. The package's test regenerates the module
from the running engine's `/openapi.json` and fails when the committed one
differs, so the Python types cannot drift from the API.

    python scripts/gen_types.py OPENAPI.json > mnemo/types.py
"""

from __future__ import annotations

import json
import keyword
import sys
import textwrap

HEADER = '''"""The API's types, as TypedDicts: what each call returns and accepts.

Generated from the OpenAPI document by scripts/gen_types.py; do not edit.
Regenerate: `python scripts/gen_types.py openapi.json > mnemo/types.py`.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, Required, TypedDict, Union

'''


def ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def scalar(t: str, schema: dict) -> str:
    return {
        "string": "str",
        "integer": "int",
        "number": "float",
        "boolean": "bool",
        "null": "None",
        "object": "dict[str, Any]",
        "array": "list[Any]",
    }[t]


def annotation(schema: dict) -> str:
    """The Python type of a (non-top-level) schema."""
    if "$ref" in schema and "properties" not in schema:
        return ref_name(schema["$ref"])
    if "const" in schema:
        return f"Literal[{json.dumps(schema['const'])}]"
    if "enum" in schema:
        return "Literal[" + ", ".join(json.dumps(v) for v in schema["enum"]) + "]"
    for union in ("anyOf", "oneOf"):
        if union in schema:
            parts = [annotation(s) for s in schema[union]]
            return " | ".join(dict.fromkeys(parts))
    types = schema.get("type")
    if isinstance(types, list):
        parts = [annotation({**schema, "type": t}) for t in types]
        return " | ".join(dict.fromkeys(parts))
    if types == "array":
        if "prefixItems" in schema:
            return "tuple[" + ", ".join(annotation(s) for s in schema["prefixItems"]) + "]"
        return f"list[{annotation(schema.get('items', {}))}]"
    if types == "object":
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            return f"dict[str, {annotation(extra)}]"
        return "dict[str, Any]"
    if types is None:
        return "Any"
    return scalar(types, schema)


def docstring(text: str | None, indent: str) -> list[str]:
    if not text:
        return []
    text = text.replace("\\", "\\\\").replace('"""', "'''")
    lines = textwrap.wrap(" ".join(text.split()), 76 - len(indent))
    if len(lines) == 1:
        return [f'{indent}"""{lines[0]}"""']
    return [f'{indent}"""{lines[0]}'] + [f"{indent}{l}" for l in lines[1:]] + [f'{indent}"""']


def typed_dict(name: str, schema: dict, bases: str = "TypedDict") -> list[str]:
    out = [f"class {name}({bases}, total=False):"]
    out += docstring(schema.get("description"), "    ")
    required = set(schema.get("required", []))
    props = schema.get("properties", {})
    for prop, sub in props.items():
        field = prop if not keyword.iskeyword(prop) else prop + "_"
        t = annotation(sub)
        t = f"Required[{t}]" if prop in required else f"NotRequired[{t}]"
        out.append(f"    {field}: {t}")
        out += docstring(sub.get("description"), "    ")
    if not props and len(out) == 1:
        out.append("    pass")
    return out


def define(name: str, schema: dict) -> list[str]:
    if "oneOf" in schema and "properties" in schema:
        # A tagged union: each variant is its own type plus the shared fields.
        out: list[str] = []
        variants = []
        for variant in schema["oneOf"]:
            base = ref_name(variant["$ref"])
            tag = variant["properties"]["type"]["const"]
            vname = f"{base}{name}"
            merged = {
                "description": f"A {name} that is a {base} (`type` = {tag!r}).",
                "properties": {**variant["properties"], **schema["properties"]},
                "required": [*variant.get("required", []), *schema.get("required", [])],
            }
            out += typed_dict(vname, merged, bases=base) + ["", ""]
            variants.append(vname)
        out += [f"{name} = Union[{', '.join(variants)}]"]
        out += docstring(schema.get("description"), "")
        return out
    if "properties" in schema or schema.get("type") == "object":
        return typed_dict(name, schema)
    out = [f"{name} = {annotation(schema)}"]
    out += docstring(schema.get("description"), "")
    return out


def generate(document: dict) -> str:
    schemas = document["components"]["schemas"]
    body: list[str] = []
    # Tagged unions last: their variants subclass the types they name.
    tagged = lambda name: "oneOf" in schemas[name] and "properties" in schemas[name]
    for name in sorted(schemas, key=lambda n: (tagged(n), n)):
        body += define(name, schemas[name]) + ["", ""]
    return HEADER + "\n" + "\n".join(body).rstrip() + "\n"


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        sys.stdout.write(generate(json.load(f)))
