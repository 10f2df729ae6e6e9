"""mnemo: long-term memory for AI agents.

    from mnemo import Memory                 # in-process: no server
    m = Memory("memory.db")
    m.remember("The user's daughter is allergic to peanuts")
    m.recall("any allergies?")["hits"][0]["content"]

    from mnemo import Client                 # a running `mnemo serve`
    c = Client("http://127.0.0.1:7878", api_key="...")

`Memory`, `Client` and `AsyncClient` share every method, argument, result
type (`mnemo.types`) and exception (`mnemo.errors`). Framework adapters:
`mnemo.langchain`, `mnemo.openai_agents`, `mnemo.llama_index`.
"""

from . import types
from .client import AsyncClient, Client
from .errors import (
    Conflict,
    InvalidInput,
    MnemoError,
    NotFound,
    ReadOnly,
    ServerError,
    TooLarge,
    Unauthorized,
    Unavailable,
    Unreachable,
)
from .memory import Memory

__all__ = [
    "AsyncClient",
    "Client",
    "Conflict",
    "InvalidInput",
    "Memory",
    "MnemoError",
    "NotFound",
    "ReadOnly",
    "ServerError",
    "TooLarge",
    "Unauthorized",
    "Unavailable",
    "Unreachable",
    "types",
]
