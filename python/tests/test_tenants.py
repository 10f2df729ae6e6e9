"""Issue 77 through the Python client: a tenant's key reads nothing the
operator keeps in `default` (with its own namespace, with none, and aimed
at `default`, which raises the typed error), and the operator still does."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest

import mnemo
from mnemo.errors import Unauthorized

from conftest import serving

ADMIN = "python-operator-secret"
NOTE = "The staging database password is hunter2-zebra"


@pytest.fixture
def keyed(tmp_path: Path, data_dir: Path) -> Iterator[str]:
    with serving(tmp_path / "tenants.db", data_dir, {"MNEMO_API_KEY": ADMIN}) as url:
        yield url


def make_key(url: str, namespace: str) -> str:
    body = json.dumps({"name": namespace, "role": "write", "namespaces": [namespace]}).encode()
    req = urllib.request.Request(
        f"{url}/keys", data=body, method="POST",
        headers={"Authorization": f"Bearer {ADMIN}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req) as r:
        return str(json.load(r)["key"])


def test_a_tenant_key_reads_nothing_of_default(keyed: str) -> None:
    with mnemo.Client(keyed, api_key=ADMIN) as operator:
        operator.remember(NOTE)
        key = make_key(keyed, "tenant-b")
        for namespace in ["tenant-b", None]:
            with mnemo.Client(keyed, api_key=key, namespace=namespace) as b:  # type: ignore[arg-type]
                hits = b.recall("staging database password")["hits"]
                assert all("hunter2" not in h["content"] for h in hits), hits
                assert all("hunter2" not in m["content"] for m in b.list_memories()["memories"])
        with mnemo.Client(keyed, api_key=key, namespace="default") as aimed:
            with pytest.raises(Unauthorized) as refused:
                aimed.recall("staging database password")
            assert refused.value.status == 403 and refused.value.code == "forbidden"
        hits = operator.recall("staging database password")["hits"]
        assert any("hunter2" in h["content"] for h in hits), hits
