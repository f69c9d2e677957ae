"""Parse ``PYTORCH_ALLOC_CONF`` / ``PYTORCH_CUDA_ALLOC_CONF`` as torch's allocator does.

torch tokenises the value at ``,`` ``:`` ``[`` ``]`` (whitespace dropped), reads ``key:value``
pairs and raises at the first CUDA allocation on an unknown key ("Unrecognized key ...") or a bad
value. Catching that here saves a crash minutes into a job.

Key list, checked against torch 2.13.0 (2026-11):
- device-independent keys: the key strings next to "Unrecognized key '" in ``strings
  torch/lib/libc10.so`` (c10/core/AllocatorConfig.cpp, ``AcceleratorAllocatorConfig::parseArgs``);
- CUDA keys: ``CUDAAllocatorConfig::getKeys()`` in the installed header
  ``torch/include/c10/cuda/CUDAAllocatorConfig.h``;
- value rules: ``ConfigTokenizer::toBool`` (only ``True``/``False``) in
  ``torch/include/c10/core/AllocatorConfig.h``, and the messages in libc10.so ("max_split_size_mb
  too small, must be >= " 20 (kLargeBuffer), "garbage_collect_threshold is invalid, set it in
  (0.0, 1.0)", "the divisions has to be power of 2").
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

# key -> value kind: bool | size_mb | fraction | pow2 | roundup | backend
KEYS: dict[str, str] = {
    "max_split_size_mb": "size_mb",
    "max_non_split_rounding_mb": "size_mb",
    "large_segment_size_mb": "size_mb",
    "garbage_collection_threshold": "fraction",
    "roundup_power2_divisions": "roundup",
    "expandable_segments": "bool",
    "pinned_use_background_threads": "bool",
    "pinned_max_round_threshold_mb": "size_mb",
    "pinned_max_cached_size_mb": "size_mb",
    # CUDA (and ROCm) allocator
    "backend": "backend",
    "release_lock_on_cudamalloc": "bool",
    "pinned_use_cuda_host_register": "bool",
    "release_lock_on_hipmalloc": "bool",
    "pinned_use_hip_host_register": "bool",
    "graph_capture_record_stream_reuse": "bool",
    "pinned_reserve_segment_size_mb": "size_mb",
    "pinned_num_register_threads": "pow2",
    "per_process_memory_fraction": "fraction",
    "pinned_free_catch_all": "bool",
    "throw_on_cudamalloc_oom": "bool",
}
BACKENDS = ("native", "cudaMallocAsync")
MIN_SPLIT_MB = 20  # kLargeBuffer


@dataclass(frozen=True)
class Problem:
    key: str
    message: str
    suggestion: str | None = None  # a corrected "key:value", when one is clear


def tokenize(value: str) -> list[str]:
    tokens: list[str] = []
    buf = ""
    for ch in value:
        if ch in ",:[]":
            if buf:
                tokens.append(buf)
                buf = ""
            tokens.append(ch)
        elif not ch.isspace():
            buf += ch
    if buf:
        tokens.append(buf)
    return tokens


def split_pairs(value: str) -> list[tuple[str, str]] | None:
    """``[(key, raw value)]`` with a list value kept in brackets; None when malformed."""
    tokens = tokenize(value)
    pairs: list[tuple[str, str]] = []
    i = 0
    while i < len(tokens):
        if tokens[i] == ",":
            i += 1
            continue
        key = tokens[i]
        if key in ":[]" or i + 2 >= len(tokens) or tokens[i + 1] != ":":
            return None
        if tokens[i + 2] == "[":
            try:
                end = tokens.index("]", i + 2)
            except ValueError:
                return None
            pairs.append((key, "".join(tokens[i + 2 : end + 1])))
            i = end + 1
        else:
            pairs.append((key, tokens[i + 2]))
            i += 3
    return pairs


def _is_int(text: str) -> bool:
    return text.isdigit()


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _bool_fix(raw: str) -> str | None:
    return {"true": "True", "1": "True", "false": "False", "0": "False"}.get(raw.lower())


def check_value(key: str, raw: str) -> Problem | None:
    kind = KEYS[key]
    if kind == "bool" and raw not in ("True", "False"):
        fix = _bool_fix(raw)
        return Problem(
            key,
            f"{key} takes True or False (exactly), not {raw!r}",
            f"{key}:{fix}" if fix else None,
        )
    if kind in ("size_mb", "pow2") and not _is_int(raw):
        return Problem(key, f"{key} takes a whole number (MiB for *_mb), not {raw!r}")
    if key == "max_split_size_mb" and int(raw) < MIN_SPLIT_MB:
        return Problem(key, f"max_split_size_mb must be >= {MIN_SPLIT_MB}", f"{key}:{MIN_SPLIT_MB}")
    if kind == "pow2" and (int(raw) == 0 or int(raw) & (int(raw) - 1)):
        return Problem(key, f"{key} must be a power of 2, not {raw}")
    if kind == "fraction":
        f = _float(raw)
        top = 1.0 if key == "per_process_memory_fraction" else 0.999999  # gc: open interval
        if f is None or not 0.0 < f <= top:
            return Problem(key, f"{key} must be a number between 0.0 and 1.0, not {raw!r}")
    if kind == "backend" and raw not in BACKENDS:
        close = difflib.get_close_matches(raw, BACKENDS, n=1, cutoff=0.5)
        return Problem(
            key,
            f"backend is {' or '.join(BACKENDS)}, not {raw!r}",
            f"backend:{close[0]}" if close else None,
        )
    if kind == "roundup":
        if raw.startswith("["):
            return None  # "[256:1,512:2,>:4]": interval:divisions pairs, checked by torch
        if not _is_int(raw) or int(raw) & (int(raw) - 1):
            return Problem(key, f"{key} must be a power of 2 (or a [size:divisions,...] list)")
    return None


def problems(value: str) -> list[Problem]:
    """Everything torch's parser would reject in ``value``; [] when it is valid."""
    if not value.strip():
        return []
    pairs = split_pairs(value)
    if pairs is None:
        return [Problem("", f"not a comma-separated list of key:value pairs: {value!r}")]
    found: list[Problem] = []
    for key, raw in pairs:
        if key not in KEYS:
            close = difflib.get_close_matches(key, list(KEYS), n=1, cutoff=0.6)
            found.append(
                Problem(
                    key,
                    f"unknown key {key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""),
                    f"{close[0]}:{raw}" if close else None,
                )
            )
            continue
        problem = check_value(key, raw)
        if problem:
            found.append(problem)
    return found


def corrected(value: str) -> str | None:
    """The value with every fixable problem fixed and nothing else changed; None if some
    problem has no clear fix."""
    pairs = split_pairs(value)
    if pairs is None:
        return None
    out = []
    for key, raw in pairs:
        problem = check_value(key, raw) if key in KEYS else problems(f"{key}:{raw}")[0]
        if problem is None:
            out.append(f"{key}:{raw}")
        elif problem.suggestion:
            out.append(problem.suggestion)
        else:
            return None
    return ",".join(out)
