"""The Python types and calls cannot drift from the API: `mnemo/types.py`
is what scripts/gen_types.py makes of the engine's own /openapi.json, and
every argument of every call is a field or parameter of its route."""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path
from typing import Any

import mnemo
from mnemo import _calls
from mnemo._bind import Api, AsyncApi

ROOT = Path(__file__).resolve().parent.parent


def document(memory: mnemo.Memory) -> dict[str, Any]:
    status, body = memory._engine.request("GET", "/openapi.json")
    assert status == 200
    return json.loads(body)


def test_types_are_generated_from_the_openapi_document(memory: mnemo.Memory) -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import gen_types
    finally:
        sys.path.pop(0)
    expected = gen_types.generate(document(memory))
    committed = Path(mnemo.types.__file__).read_text()
    assert committed == expected, (
        "mnemo/types.py is not the API's: regenerate it "
        "(python scripts/gen_types.py openapi.json > mnemo/types.py)"
    )


def test_every_call_sends_what_its_route_accepts(memory: mnemo.Memory) -> None:
    doc = document(memory)
    for build in _calls.CALLS:
        params = inspect.signature(build).parameters
        # Every argument given: each must reach the request.
        call = build(**{n: _sample(p) for n, p in params.items()})
        route = doc["paths"][_template(call.path, doc)][call.method.lower()]
        accepted = {p["name"] for p in route.get("parameters", []) if "name" in p}
        schema = route.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
        if schema:
            name = schema["$ref"].rsplit("/", 1)[-1]
            accepted |= set(doc["components"]["schemas"][name]["properties"])
        sent = set(call.query) | (set(call.body) if isinstance(call.body, dict) else set())
        assert sent <= accepted, f"{build.__name__}: {sent - accepted} are not in {call.method} {call.path}"
        named = {n for n, p in params.items() if p.kind is p.KEYWORD_ONLY}
        assert named <= sent, f"{build.__name__}: {named - sent} are not sent"


def test_every_call_is_a_method_of_both_apis() -> None:
    for build in _calls.CALLS:
        for api in (Api, AsyncApi):
            method = getattr(api, build.__name__)
            assert method.__wrapped__ is build
    assert inspect.iscoroutinefunction(AsyncApi.recall)


def _sample(p: inspect.Parameter) -> Any:
    return "mem_x" if p.name == "id" else "x"


def _template(path: str, doc: dict[str, Any]) -> str:
    """The route a concrete path is an instance of."""
    parts = path.split("/")
    for route in doc["paths"]:
        r = route.split("/")
        if len(r) == len(parts) and all(a == b or a.startswith("{") for a, b in zip(r, parts)):
            return route
    raise AssertionError(f"no route for {path}")
