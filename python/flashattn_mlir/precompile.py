"""Compiles a list of kernel configurations into a cache directory, for a
deployment whose machine has no compiler (the runtime there finds them in
its disk cache by the same keys).

A configuration is a dict of fa_attention_config's fields by name, enums
as strings: {"target": "sm90", "dtype": "bf16", "num_q_heads": 32,
"num_kv_heads": 8, "head_dim": 128, "head_dim_v": 128, "causal":
"bottom_right", "flags": ["with_lse"], "num_splits": 0}; missing fields
take fa_attention_config_default's values (dense, f16, no mask). Running
a workload with FLASHATTN_RECORD_CONFIGS=FILE writes each configuration
it asks for to FILE, one JSON object a line: this command's input.

    python3 -m flashattn_mlir precompile --cache-dir DIR FILE...
"""

import json

from . import _runtime


def read_configs(paths):
    """Configurations from JSON files: a list of objects, or one object a
    line (JSON lines); duplicates are dropped."""
    seen, configs = set(), []
    for path in paths:
        with open(path) as f:
            text = f.read().strip()
        items = json.loads(text) if text.startswith("[") else [
            json.loads(line) for line in text.splitlines() if line.strip()]
        for c in items:
            key = json.dumps(c, sort_keys=True)
            if key not in seen:
                seen.add(key)
                configs.append(c)
    return configs


def precompile(configs, cache_dir, compiler_library=None):
    """Compiles (or finds) each configuration's kernel into cache_dir's disk
    cache; returns the runtime's cache statistics (compiles, disk_writes,
    ...). Raises FlashAttnError on the first one that fails."""
    rt = _runtime.Runtime(cache_dir=cache_dir, compiler_library=compiler_library)
    for c in configs:
        fields = dict(c)
        if "flags" in fields:
            fields["flags"] = tuple(sorted(fields["flags"]))
        rt.kernel(tuple(sorted(fields.items())))
    stats = rt.cache_stats()
    if not stats["disk_enabled"]:
        raise _runtime.FlashAttnError(5, "the cache directory %s is not usable (it must be "
                                         "owned by this user, mode 0700)" % cache_dir)
    return stats
