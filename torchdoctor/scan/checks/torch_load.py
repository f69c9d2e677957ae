"""TD101/TD102: `torch.load` without `map_location` / `weights_only`; TD103: `torch.jit.load`
without `map_location`."""

from __future__ import annotations

import ast
import glob
import re
from itertools import pairwise
from typing import Any

from ..astutil import assigned_values, call_name, dotted, imported_names, parent_map
from ..constants import author_tail, module_constants, project_relative, reexports
from ..context import DEVICE_VARIABLE, Check, Context, catches
from ..model import Edit
from ..saved_files import path_argument, path_keys

# Files that hold no CUDA tensors: RNG state is a CPU ByteTensor, schedulers and GradScaler
# keep Python numbers, caches and preprocessed data are built on the host. Told apart by the
# path or the consumer of the result; or (project view) by the project's own torch.save of
# the file from CPU-only data (saved_files.py).
# The training arguments a Hugging Face Trainer saves (`training_args.bin`) hold no tensors
# (microsoft/Oscar's run_retrieval.py, eighty-seventh blind corpus); nor do other `*_args`
# files, statistics or a run's history of losses (vec2text's `model_args.bin`, a MAPPO
# runner's `stats.pt`, DiffBinaural's `history`: sets 162-194, seven lookalikes, no pitfall).
CPU_ONLY_STATE = re.compile(
    r"rng|random|sched|scaler|lr_|cache|processed|offload|training_args", re.I
)
# Read only in the path's string parts (a file name) or the key read from what is loaded
# (`torch.load(p)["history"]`): as variable names they say nothing (`model_args.model_name_or_path`)
CPU_ONLY_FILE = re.compile(r"_args\b|stats|history", re.I)
KEY_READ = re.compile(r"""\s*\[\s*["']([^"'\]]+)["']\s*\]""")
SAFE_GLOBALS = re.compile(r"safe_globals$")
# Code that runs on whatever device it is given: `.to(device)`, a `device` parameter.
DEVICE_PARAMETER = re.compile(r"\.to\(\s*(?:self\.|args\.)?device\s*[,)]|def \w+\([^)]*\bdevice\b")
# A command-line option that picks the device: the user may ask for the CPU (CogVideo's
# cli_vae_demo.py loads GPU-encoded latents under `--device`).
DEVICE_OPTION = re.compile(r"""["']--device["']""")
# The loading file's own folder, as code writes it.
FILE_FOLDER = frozenset(
    wrap.format(inner)
    for inner in ("__file__", "os.path.abspath(__file__)", "os.path.realpath(__file__)")
    for wrap in ("os.path.dirname({})", "path.dirname({})")
) | frozenset(
    f"{p}(__file__){r}.parent"
    for p in ("Path", "pathlib.Path")
    for r in ("", ".resolve()", ".absolute()")
)
WEIGHTS_ONLY_DEFAULT = (2, 6)  # torch.load defaults to weights_only=True from 2.6 on


def _last_arg(node: ast.Call) -> ast.expr:
    return max(
        [*node.args, *(k.value for k in node.keywords)],
        key=lambda n: (n.end_lineno, n.end_col_offset),  # type: ignore[attr-defined]
    )


def _cpu_only_state(ctx: Context, node: ast.Call) -> bool:
    if ctx.then.get(id(node)) == "numpy":
        # `torch.load(p).numpy()`: a CUDA tensor's .numpy() raises, so the author's file holds
        # CPU tensors (plai-group's CARLA videos, blind set 378)
        return True
    path = path_argument(node, 0, "f")
    texts = [ast.unparse(path)] if path is not None else []
    parent = ctx.parents.get(id(node))
    if isinstance(parent, ast.Call):  # torch.set_rng_state(torch.load(p)), sched.load_state_dict(…)
        texts.append(dotted(parent.func))
    if any(CPU_ONLY_STATE.search(t) for t in texts):
        return True
    names = [
        n.value
        for n in (ast.walk(path) if path is not None else ())
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]
    key = _key_read(ctx, node)
    if key is not None:
        names.append(key)  # torch.load(p)["history"]
    return any(CPU_ONLY_FILE.search(t) for t in names)


def _key_read(ctx: Context, node: ast.Call) -> str | None:
    """The string key read from the load's result on its own line: `torch.load(p)["history"]`."""
    line = ctx.lines[node.end_lineno - 1].encode()  # type: ignore[operator]
    after = line[node.end_col_offset :].decode(errors="ignore")  # offsets count UTF-8 bytes
    m = KEY_READ.match(after)
    return m.group(1) if m else None


def _load_keys(ctx: Context, node: ast.Call) -> list[str]:
    """Keys of the file a torch.load reads (saved_files.py): of its argument, and of what the
    function assigns to it when it is a name (`ckpt_path = os.path.join(out, "ckpt.pt")`)."""
    exprs = _path_exprs(ctx, node)
    if not exprs:
        return []
    keys = path_keys(ctx.path, exprs[0])
    for value in exprs[1:]:
        keys += [k for k in path_keys(ctx.path, value) if k.startswith("file:")]
    return sorted(set(keys))


def _saved_needs(ctx: Context, node: ast.Call, mode: str) -> tuple[str, ...] | None:
    """project.py decides: dropped for a file the project saves from CPU data, or for one
    the scanned tree ships (a fixed relative path: "at:" or "glob:") that holds no CUDA tensors
    (committed.py); with mode "caller", kept only where a file that imports this one falls back
    to the CPU."""
    keys = _load_keys(ctx, node)
    shipped = _fixed_relative_path(ctx, node)
    if shipped is not None:
        keys.append(f"{shipped[1] if shipped[1:] else 'at'}:{shipped[0]}")
    return ("saved", mode, *keys) if keys or mode == "caller" else None


# torch.distributed calls that move objects between the ranks of one job
EXCHANGE = frozenset([
    "all_gather", "all_gather_object", "broadcast", "broadcast_object_list", "gather",
    "gather_object", "scatter", "send", "recv", "all_reduce", "barrier",
])  # fmt: skip


def _chains(expr: ast.AST) -> set[str]:
    """The variables an expression reads, as dotted chains (`args.output_dir`, `tmpdir`), not
    the functions it calls (`os.path.join`)."""
    called = {id(n.func) for n in ast.walk(expr) if isinstance(n, ast.Call)}
    inner = {id(n.value) for n in ast.walk(expr) if isinstance(n, ast.Attribute)}
    return {
        dotted(n)
        for n in ast.walk(expr)
        if isinstance(n, (ast.Name, ast.Attribute)) and id(n) not in called | inner and dotted(n)
    }


def _exchanged(ctx: Context, node: ast.Call) -> bool:
    """The function torch.saves an object and meets the other ranks, and the load reads what
    was saved: an in-memory buffer, a path built from a variable the save's path uses too, or
    anything that does not come from the function's parameters (a temporary file). What it
    loads, the job's own processes serialised a moment ago (sam2's
    training/utils/distributed.py gathers any picklable object that way, through a BytesIO or a
    shared folder; fifth blind corpus). ALBEF's main() saves checkpoints and waits at a
    barrier, but loads the user's `args.checkpoint` (eighty-seventh corpus: seven TD102
    missed)."""
    f = ctx.func
    if f is None or f.trains():
        return False  # a training function that also saves and syncs (yolov7's train())
    key = f"exchanged:{id(f.node)}"
    if key not in ctx.memo:
        calls = [n for n in ast.walk(f.node) if isinstance(n, ast.Call)]
        names = [dotted(c.func) for c in calls]
        saved = [
            (c, _reads(f.node, c.args[1]))
            for c, name in zip(calls, names, strict=True)
            if name.endswith("torch.save") and len(c.args) > 1
        ]
        exchanges = any(n.rsplit(".", 1)[-1] in EXCHANGE for n in names)
        saves = any(n.endswith("torch.save") for n in names)
        ctx.memo[key] = (saved, parent_map(f.node)) if exchanges and saves else None
    memo = ctx.memo[key]
    path = path_argument(node, 0, "f")
    if memo is None or path is None:
        return False
    if any(isinstance(n, ast.Call) and dotted(n.func).endswith("BytesIO") for n in ast.walk(path)):
        return True
    saved, parents = memo  # type: ignore[misc]
    read = _reads(f.node, path)
    same_file = [c for c, reads in saved if reads & read]
    if same_file and all(_other_branch(parents, c, node) for c in same_file):
        # `if os.path.exists(cached): load … else: build, save`, barriers around: a cache an
        # earlier run wrote (BERT-NER-Pytorch's and biobert's load_and_cache_examples, set 353:
        # four security findings missed)
        return False
    from_params = any(r.split(".", 1)[0] in _parameters(f.node) for r in read)
    return bool(same_file) or not from_params


def _other_branch(parents: dict[int, ast.AST], a: ast.AST, b: ast.AST) -> bool:
    """Are `a` and `b` in the two branches of one `if` that asks whether a file exists, with no
    loop around it (`if os.path.exists(cached): load … else: … save`)? Not the branches of
    `if rank == 0: save … else: load`: that is the ranks' exchange itself."""

    def branches(node: ast.AST) -> dict[int, bool]:
        """id(if) -> whether `node` is in its body, for each existence test around it, up to
        the first loop."""
        out: dict[int, bool] = {}
        child, up = node, parents.get(id(node))
        while up is not None and not isinstance(up, (ast.For, ast.AsyncFor, ast.While)):
            if isinstance(up, ast.If) and child is not up.test and _asks_exists(up.test):
                out[id(up)] = any(child is s for s in up.body)
            child, up = up, parents.get(id(up))
        return out

    first, second = branches(a), branches(b)
    return any(k in second and second[k] != v for k, v in first.items())


def _asks_exists(test: ast.expr) -> bool:
    """`os.path.exists(p)`, `p.is_file()`, `os.path.isfile(p) and not args.overwrite`."""
    return any(
        isinstance(n, ast.Call) and call_name(n) in ("exists", "isfile", "is_file")
        for n in ast.walk(test)
    )


def _parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Every parameter name, `*args` and `**kwargs` included."""
    a = fn.args
    return {p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if p}


def _reads(scope: ast.AST, expr: ast.expr) -> set[str]:
    """The variables a path expression reads (`_chains`), and those of what the function
    assigns to its names (`load_data_path = os.path.join(save_dir, name)`)."""
    read = _chains(expr)
    for name in [r for r in read if "." not in r]:
        for value in assigned_values(scope, name):
            read |= _chains(value)
    return read


def _path_exprs(ctx: Context, node: ast.Call) -> list[ast.expr]:
    """The load's path argument, and what the function assigns to it when it is a name."""
    path = path_argument(node, 0, "f")
    if path is None:
        return []
    out = [path]
    while (  # `str(ckpt)`, `Path(ckpt)`: the path inside
        isinstance(path, ast.Call)
        and dotted(path.func) in PATH_WRAPPERS
        and len(path.args) == 1
        and not path.keywords
    ):
        path = path.args[0]
        out.append(path)
    if isinstance(path, ast.Name) and ctx.func is not None:
        out += assigned_values(ctx.func.node, path.id)
    return out


PATH_WRAPPERS = frozenset(["str", "os.fspath", "Path", "pathlib.Path"])
# Calls whose arguments are each a whole part of a path (`os.path.join(folder, name)`)
PATH_JOINS = frozenset(["join", "joinpath", "Path"])


# `inspect.getfile(self.__init__)`: the loading code's own file, as `__file__` names it (the
# LPIPS copies that ship their linear layers' weights beside them; blind set 190)
SOURCE_FILE = frozenset(["inspect.getfile", "inspect.getsourcefile"])


def _packaged(ctx: Context, node: ast.Call) -> bool:
    """A file found from `__file__`: data shipped inside the package itself, as trusted as the
    code that loads it and loaded on every machine the package supports (facenet-pytorch's
    mtcnn.py loads ../data/pnet.pt that way; sixth blind corpus). Not a path the caller names
    below that folder: nanoGPTplus's `Path(__file__).parents[2] / path` loads whatever checkpoint
    its `path` parameter says (blind set 352)."""
    params = {p for f in ctx.funcs for p in f.params()}
    return any(
        any(
            (isinstance(n, ast.Name) and n.id == "__file__")
            or (isinstance(n, ast.Call) and dotted(n.func) in SOURCE_FILE)
            for n in ast.walk(e)
        )
        and not _joins_a_parameter(e, params)
        for e in _path_exprs(ctx, node)
    )


def _joins_a_parameter(expr: ast.expr, params: set[str]) -> bool:
    """Is a parameter a whole part of the path (`folder / path`, `os.path.join(folder, path)`)?
    A parameter that only picks a name in a string (LPIPS's `'weights/v%s/%s.pth' % (version,
    net)`) chooses among the shipped files."""
    for n in ast.walk(expr):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div):
            parts: list[ast.expr] = [n.left, n.right]
        elif isinstance(n, ast.Call) and dotted(n.func).rsplit(".", 1)[-1] in PATH_JOINS:
            parts = list(n.args)
        else:
            continue
        if any(isinstance(p, ast.Name) and p.id in params for p in parts):
            return True
    return False


# Calls that only assemble a path: two of them name the same file only if they read the same.
PATH_BUILDERS = frozenset(["os.path.join", "path.join", "join", "Path", "pathlib.Path", "str"])
LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _path_key(scope: ast.AST, expr: ast.expr | None) -> str | None:
    """What a save and a load must share to name the same file: the expression's text (a
    name the scope assigns once stands for what it assigns), or the project function that
    builds the path, whatever its arguments (tgn's `get_checkpoint_path(epoch)`)."""
    expr = _assigned_once(scope, expr)
    if expr is None:
        return None
    if isinstance(expr, ast.Call) and dotted(expr.func) and dotted(expr.func) not in PATH_BUILDERS:
        return "call:" + dotted(expr.func)
    return ast.unparse(expr)


def _assigned_once(scope: ast.AST, expr: ast.expr | None) -> ast.expr | None:
    """A name the scope assigns once stands for what it assigns; anything else for itself."""
    if isinstance(expr, ast.Name):
        values = assigned_values(scope, expr.id)
        if len(values) == 1:
            return values[0]
    return expr


def _in_same_run(ctx: Context, node: ast.Call) -> bool:
    """The load reads a file the same code wrote a moment before with torch.save, from the
    device it trains on, so it loads back onto that device: the save sits in a loop that also
    holds the load (tgn's early stopping reloads the best epoch's file; set 176), or in a loop
    or a statement the load follows in the same block (CTGCN reloads its best model after
    training; a trainer of set 192 its last epoch's). A load before the save, or in another
    branch, reads an earlier run's file: still flagged."""
    scope = ctx.func.node if ctx.func is not None else ctx.module
    key = f"saves:{id(scope)}"
    if key not in ctx.memo:
        savers = _savers(ctx)
        saves = [
            (n, to)
            for n in ast.walk(scope)
            if isinstance(n, ast.Call)
            for to in [_saved_to(n, savers)]
            if to is not None
        ]
        f = ctx.func
        handed = _handed_model_and_path(scope, bool(f and f.cls and f.cls.is_module))
        ctx.memo[key] = (saves, handed, parent_map(scope) if saves or handed else {})
    saves, handed, parents = ctx.memo[key]
    path = path_argument(node, 0, "f")
    wanted = _path_key(scope, path)
    if wanted is None:
        return False
    if any(
        _path_key(scope, to) == wanted and _saved_before(parents, save, node) for save, to in saves
    ):
        return True
    built_from = _path_names(scope, path) | {f"={ast.unparse(path)}"} if path is not None else set()
    return any(name in built_from and _saved_before(parents, call, node) for call, name in handed)


def _saved_to(call: ast.Call, savers: dict[str, tuple[int, str]]) -> ast.expr | None:
    """The path a call writes with torch.save: `torch.save(obj, path)`, or a function of the
    file that saves to its path parameter (`_atomic_save(state, ckpt_dir / "best_model.pt")`)."""
    name = dotted(call.func)
    if name.endswith("torch.save"):
        return call.args[1] if len(call.args) > 1 else None
    if isinstance(call.func, ast.Name) and name in savers:
        return path_argument(call, *savers[name])
    return None


def _savers(ctx: Context) -> dict[str, tuple[int, str]]:
    """Functions the module defines that torch.save to a path built from one of their
    parameters, by name: (its position, its name). A meshgraphnet trainer of blind set 400
    writes its best model through `_atomic_save(obj, path)` (a temporary file beside `path`,
    then `os.replace`) and reloads it after training."""
    got = ctx.memo.get("savers")
    if got is None:
        got = ctx.memo["savers"] = {}
        for fn in ctx.module.body:
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found = _saved_parameter(fn)
                if found is not None:
                    got[fn.name] = found
    return got  # type: ignore[return-value]


def _saved_parameter(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[int, str] | None:
    params = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args]]
    for call in ast.walk(fn):
        if not (isinstance(call, ast.Call) and dotted(call.func).endswith("torch.save")):
            continue
        if len(call.args) < 2:
            continue
        names = _path_names(fn, call.args[1])  # `tmp = path.with_suffix(".tmp")`: `path`
        hit = [p for p in params if p in names]
        if len(hit) == 1:
            return params.index(hit[0]), hit[0]
    return None


# What names a model in a call's arguments: `self.model`, `net`, `model.module`, `actor`…
MODEL_WORD = re.compile(r"(^|[._])(model|net|network|actor|critic|policy|module)s?($|[._])", re.I)


def _handed_model_and_path(scope: ast.AST, self_is_model: bool) -> list[tuple[ast.Call, str]]:
    """Calls in a loop that are handed a model and a plain name besides: a checkpointing
    helper given the folder or file it writes (Time-Series-Library's `early_stopping(
    vali_loss, self.model, path)`, whose EarlyStopping saves `path/checkpoint.pth`; the
    train() after it reloads that file in the same run: eight repositories of blind sets
    163-257, every such load labelled same-run)."""
    found = []
    built = _built_with(scope)
    for loop in ast.walk(scope):
        if not isinstance(loop, LOOPS):
            continue
        for call in ast.walk(loop):
            if not isinstance(call, ast.Call):
                continue
            args = [*call.args, *(k.value for k in call.keywords)]
            if not any(MODEL_WORD.search(dotted(a)) or _self_model(a, self_is_model) for a in args):
                continue
            # not `self`: the model handed over, not a path (`self.best_path` is no `self`)
            found += [(call, a.id) for a in args if isinstance(a, ast.Name) and a.id != "self"]
            if isinstance(call.func, ast.Name):  # the helper built with its path
                found += [(call, f"={text}") for text in built.get(call.func.id, ())]
    return found + _trained_into(scope)


# A training call's name: `train`, `fit`, `train_student`, `trainer.fit_model`.
TRAINS = re.compile(r"^(train|fit)(_|$)", re.I)


def _trained_into(scope: ast.AST) -> list[tuple[ast.Call, str]]:
    """Training calls with the text of each argument they are handed: `distiller.train_student(
    student, loader, output_path=args.output)` writes its best model to the path it was given,
    and `torch.load(args.output)` after it reloads that file in the same run, onto the device
    it trained on (a distillation script of blind set 391)."""
    return [
        (call, f"={ast.unparse(a)}")
        for call in ast.walk(scope)
        if isinstance(call, ast.Call) and TRAINS.match(dotted(call.func).rsplit(".", 1)[-1])
        for a in [*call.args, *(k.value for k in call.keywords)]
    ]


def _self_model(arg: ast.expr, self_is_model: bool) -> bool:
    return self_is_model and isinstance(arg, ast.Name) and arg.id == "self"


def _built_with(scope: ast.AST) -> dict[str, list[str]]:
    """Names the scope assigns a call's result, with the text of that call's arguments:
    `early_stopping = EarlyStopping(patience=p, checkpoint_path=self.checkpoint_path)`, a
    checkpointing helper told its file when built (the anomaly-imputation autoencoder of
    blind set 375 reloads that file after its training loop)."""
    out: dict[str, list[str]] = {}
    for n in ast.walk(scope):
        if (
            isinstance(n, ast.Assign)
            and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name)
            and isinstance(n.value, ast.Call)
        ):
            args = [*n.value.args, *(k.value for k in n.value.keywords)]
            out[n.targets[0].id] = [ast.unparse(a) for a in args]
    return out


def _path_names(scope: ast.AST, path: ast.expr | None) -> set[str]:
    """The plain names a load's path is built from (through a name the scope assigns once:
    `best_model_path = path + "/" + "checkpoint.pth"`)."""
    path = _assigned_once(scope, path)
    if path is None:
        return set()
    return {n.id for n in ast.walk(path) if isinstance(n, ast.Name)}


def _saved_before(parents: dict[int, ast.AST], save: ast.AST, load: ast.AST) -> bool:
    """Is `save` in a loop that holds `load`, or in a loop or statement that ends before `load`
    in the same block (the last epoch's file saved after training, then reloaded: the depth
    estimation trainer of blind set 192)?"""
    up = [load]
    while id(up[-1]) in parents:
        up.append(parents[id(up[-1])])
    anchor = parents.get(id(save))  # the loop that holds the save, else its own statement
    while anchor is not None and not isinstance(anchor, LOOPS):
        anchor = parents.get(id(anchor))
    if anchor is None:
        anchor = save
        while anchor is not None and not isinstance(anchor, ast.stmt):
            if isinstance(anchor, ast.Lambda):
                return False  # `save = lambda: torch.save(…)` saves nothing until called
            anchor = parents.get(id(anchor))
        if anchor is None:
            return False
    elif any(a is anchor for a in up):
        return True
    block = parents.get(id(anchor))
    for child, owner in pairwise(up):
        if owner is block:
            return any(
                isinstance(stmts, list) and anchor in stmts and child in stmts
                for stmts in vars(owner).values()
            ) and getattr(child, "lineno", 0) > getattr(anchor, "end_lineno", 0)
    return False


def _saves_by_mistake(node: ast.Call) -> bool:
    """`torch.load(model.state_dict(), path)`: a `torch.save` misspelt. The call raises before
    it reads a byte, so neither map_location nor weights_only is the fix (Deep-RL-with-pytorch's
    SAC, thirty-eighth blind corpus)."""
    first = path_argument(node, 0, "f")
    return (
        isinstance(first, ast.Call)
        and isinstance(first.func, ast.Attribute)
        and first.func.attr == "state_dict"
    )


def _judged_load(ctx: Context, node: ast.Call) -> dict[str, Any]:
    """A GPU-saved file fails to load only on a machine without CUDA: `high` where the file
    is meant to run there (it falls back to the CPU itself), `medium` where a `--device`
    option lets the user pick the CPU (outside training code), or in code that takes its
    device from a caller (`def __init__(self, …, device)`, `.to(device)`) when a file of the
    project that imports it falls back to the CPU (BCQ's agents and their main.py;
    project.py decides), `low` elsewhere. Of the medium loads of eighteen blind corpora, 8 of
    11 with such an importer were crashes and 1 of 14 without one (benchmarks/scan_blind*)."""
    if ctx.falls_back_to_cpu:
        return {"needs": _saved_needs(ctx, node, "")}
    if "device_parameter" not in ctx.memo:
        ctx.memo["device_option"] = bool(DEVICE_OPTION.search(ctx.text))
        ctx.memo["device_parameter"] = bool(DEVICE_PARAMETER.search(ctx.text))
    if ctx.memo["device_option"] and not ctx.trains:  # a trainer's option names its GPUs
        why = "a --device option lets the user pick the CPU"
        return {"confidence": "medium", "why": why, "needs": _saved_needs(ctx, node, "")}
    if ctx.memo["device_parameter"]:
        why = "the code takes its device from a caller, which may pick the CPU"
        return {"confidence": "medium", "why": why, "needs": _saved_needs(ctx, node, "caller")}
    return {
        "confidence": "low",
        "why": "nothing in the file runs it without CUDA (no CPU fallback): a GPU-saved file "
        "fails only on a machine this code may not be meant for",
        "needs": _saved_needs(ctx, node, ""),
    }


def _torch_load(ctx: Context, node: ast.Call) -> None:
    kw = {k.arg for k in node.keywords}
    last = _last_arg(node)
    if _exchanged(ctx, node) or _packaged(ctx, node) or _saves_by_mistake(node):
        return
    # Under `if use_cuda:` the load runs where CUDA is (Wav2Lip's _load maps to the CPU in its
    # else branch): map_location is moot there; weights_only is not.
    bare = "map_location" not in kw and len(node.args) < 2 and not ctx.guard
    # the same-run test walks the function: asked only of a load that lacks map_location
    if bare and not _cpu_only_state(ctx, node) and not _in_same_run(ctx, node):
        if ctx.device_in_scope(node):
            target, edit = DEVICE_VARIABLE, True
        else:
            # "cpu" would move a whole pickled model (or tensors used as they are) off the
            # GPU the program expects: only safe straight into load_state_dict.
            target, edit = '"cpu"', id(node) in ctx.into_load_state_dict
        ctx.report(
            "TD101",
            node,
            "`torch.load` without `map_location` fails on a CPU machine for a GPU-saved file",
            f"torch.load(…, map_location={target})",
            ctx.insert_after(last, f", map_location={target}") if edit else None,
            **_judged_load(ctx, node),
        )
    _weights_only(ctx, node, kw, ctx.insert_after(last, ", weights_only=True"))


def _pickle_module_load(ctx: Context, node: ast.Call) -> None:
    """`torch.load(p, pickle_module=dill)`: every torch release unpickles in full beside a
    `pickle_module` (2.6's safe default is skipped, weights_only=True raises), so a file from
    elsewhere runs its code. Diffusion Policy's workspace loads and their many copies: real
    in 7 of the 9 blind repositories that have one (14 of 18 lines; sets 4-303); the other
    two load only the project's own dill checkpoints. No edit: the fix is a state-dict format."""
    needs = _shipped_needs(ctx, node)
    ctx.report(
        "TD102",
        node,
        "`torch.load(…, pickle_module=…)` unpickles in full on every torch release: a "
        "checkpoint from elsewhere runs its code",
        "load only files you trust; save a state_dict and load it with weights_only=True",
        None,
        needs=needs,
    )


def _shipped_needs(ctx: Context, node: ast.Call) -> tuple[str, ...] | None:
    """What the project view looks up to tell weights committed with the code: the load's
    fixed relative path ("shipped"), or the project constant that names it ("shipped-import")."""
    shipped = _fixed_relative_path(ctx, node)
    if shipped:
        return ("shipped", *shipped)
    imported = imported_name(ctx, node)
    return None if imported is None else ("shipped-import", *imported)


def _weights_only(ctx: Context, node: ast.Call, kw: set[str | None], edit: Edit | None) -> None:
    """TD102 for a load given the keywords `kw`; `edit` adds weights_only=True, applied only
    where the result goes straight into load_state_dict."""
    torch_min = ctx.project.torch_min
    if "weights_only" in kw or ctx.in_with(SAFE_GLOBALS):
        return  # an explicit choice, or allow-listed globals
    if "pickle_module" in kw:
        _pickle_module_load(ctx, node)
        return
    if torch_min is not None and torch_min >= WEIGHTS_ONLY_DEFAULT:
        return  # the project requires torch ≥ 2.6, where weights_only=True is the default
    if _old_torch_fallback(ctx):
        return
    # weights_only=True refuses a pickled module or object: only a state dict surely loads
    # (fix.py may find more evidence, e.g. a torch.save of a state_dict() to the same path).
    if id(node) not in ctx.into_load_state_dict:
        edit = None
    needs = _shipped_needs(ctx, node)
    ctx.report(
        "TD102",
        node,
        "`torch.load` without `weights_only`: unpickling can run arbitrary code",
        "torch.load(…, weights_only=True); weights_only=False only for trusted files",
        edit,
        needs=needs,
    )


def _old_torch_fallback(ctx: Context) -> bool:
    """In the `except TypeError:` of a `try` whose load passes weights_only: the fallback for a
    torch older than the keyword (1.13), where a full unpickling is all there is, and the
    author's choice is made in the `try` (diffusion-policy-obstacle-reach-2d's eval scripts,
    blind set 266: three lookalikes); any handler where that load already passes
    weights_only=False. A wider one (`except:`, `except Exception:`) after weights_only=True
    also catches the UnpicklingError of a file the safe load refused, and unpickles that
    very file in full (Speaker-Verification's verify.py, blind set 400, labelled real; the
    `except TypeError:` fallbacks of sets 319-403 that were labelled, six, were all
    lookalikes)."""
    for tried, handler in ctx.handlers:
        chosen = [
            k.value
            for stmt in tried.body
            for n in ast.walk(stmt)
            if isinstance(n, ast.Call) and dotted(n.func).endswith("load")
            for k in n.keywords
            if k.arg == "weights_only"
        ]
        if not chosen:
            continue
        if _names_type_error_only(handler.type):
            return True
        if catches(handler.type, "TypeError") and all(
            isinstance(v, ast.Constant) and v.value is False for v in chosen
        ):
            return True
    return False


def _names_type_error_only(kind: ast.expr | None) -> bool:
    kinds = kind.elts if isinstance(kind, ast.Tuple) else [kind]
    return all(k is not None and dotted(k).rsplit(".", 1)[-1] == "TypeError" for k in kinds)


def _fixed_relative_path(ctx: Context, node: ast.Call) -> tuple[str, ...] | None:
    """_fixed_path, once per load: TD101 and TD102 both ask it of a load that lacks both."""
    key = f"fixed:{id(node)}"
    if key not in ctx.memo:
        ctx.memo[key] = _fixed_path(ctx, node)
    return ctx.memo[key]  # type: ignore[return-value]


def _fixed_path(ctx: Context, node: ast.Call) -> tuple[str, ...] | None:
    """The path a load reads when the code fixes it and it is relative, for the project view
    to look up in the scanned tree (project.py, "shipped"): a string literal, or a name the
    function assigns only that literal; `os.path.join(HERE, "a.pt")` where the module binds
    HERE to the file's own folder; an f-string whose folder is literal, as a glob of the
    files it may name (`f"src/env/data/{mode}.pt"`, with "glob")."""
    path = path_argument(node, 0, "f")
    if path is None:
        return None
    texts = _constant_texts(ctx, path)
    if texts is not None:
        return _relative(texts.pop()) if len(texts) == 1 else None
    for expr in _path_exprs(ctx, node):
        pattern = _pattern(expr)
        if pattern is not None:
            return (pattern, "glob") if project_relative(pattern) else None
        beside = _beside_file(ctx, expr)
        if beside is not None:
            return _relative(beside)
    return None


def _relative(text: str) -> tuple[str, ...] | None:
    inside = project_relative(text)
    if inside is not None:
        return (inside,)
    tail = author_tail(text)
    return None if tail is None else (tail, "tail")


def _pattern(expr: ast.expr) -> str | None:
    """`f"src/env/data/{mode}.pt"` (or `"param/bc_model_{}.pth".format(i)`, Imitation-Learning,
    blind set 196) as the glob `src/env/data/*.pt`: only where every folder is literal and the
    name keeps some literal text (`f"{name}"` could be anything)."""
    if isinstance(expr, ast.JoinedStr):
        parts = [
            glob.escape(v.value)
            if isinstance(v, ast.Constant) and isinstance(v.value, str)
            else "*"
            for v in expr.values
        ]
    elif (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr == "format"
        and isinstance(expr.func.value, ast.Constant)
        and isinstance(expr.func.value.value, str)
    ):
        literal = re.split(r"\{[^{}]*\}", expr.func.value.value)
        parts = ["*".join(glob.escape(t) for t in literal)]
    else:
        return None
    folder, _, name = "".join(parts).replace("\\", "/").rpartition("/")
    if not folder or "*" in folder or not name.strip("*"):
        return None
    return f"{folder}/{name}"


def _beside_file(ctx: Context, expr: ast.expr) -> str | None:
    """ "a/b.pt" for `os.path.join(HERE, "a", "b.pt")` (or `HERE / "a" / "b.pt"`, `HERE +
    "/a/b.pt"`, `f"{HERE}/a/b.pt"`), where HERE is the loading file's folder: a name the file
    binds only to it (ComfyUI-HunyuanVideoWrapper's `script_directory =
    os.path.dirname(os.path.abspath(__file__))`; avian-mesh's `this_dir + '/pose_bone_prior.pth'`,
    blind set 251) or the expression itself. "../a/b.pt" for its parent
    (`f"{Path(__file__).parent.parent}/artifacts/deeplsd/deeplsd_md.tar"`,
    layout_aware_monodepth's committed DeepLSD weights, set 322)."""
    if isinstance(expr, ast.Call) and dotted(expr.func).endswith("path.join"):
        first, rest = (expr.args[0], expr.args[1:]) if expr.args else (None, [])
    elif (
        isinstance(expr, ast.BinOp)
        and isinstance(expr.op, ast.Add)
        and isinstance(expr.right, ast.Constant)
        and isinstance(expr.right.value, str)
        and expr.right.value.startswith(("/", "\\"))
    ):
        first, rest = expr.left, [ast.Constant(expr.right.value.lstrip("/\\"))]
    elif isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Div):
        pieces: list[ast.expr] = []
        while isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Div):
            pieces.insert(0, expr.right)
            expr = expr.left
        first, rest = expr, pieces
    elif (
        isinstance(expr, ast.JoinedStr)
        and len(expr.values) == 2
        and isinstance(expr.values[0], ast.FormattedValue)
        and expr.values[0].format_spec is None
        and expr.values[0].conversion == -1  # not `{HERE!r}`: that quotes the folder
        and isinstance(expr.values[1], ast.Constant)
        and str(expr.values[1].value).startswith(("/", "\\"))
    ):
        first = expr.values[0].value
        rest = [ast.Constant(str(expr.values[1].value).lstrip("/\\"))]
    else:
        return None
    ups = _above_file(ctx, first) if first is not None else None
    if ups is None or not rest:
        return None
    if not all(isinstance(r, ast.Constant) and isinstance(r.value, str) for r in rest):
        return None
    return "../" * ups + "/".join(str(r.value) for r in rest if isinstance(r, ast.Constant))


def _above_file(ctx: Context, expr: ast.expr) -> int | None:
    """How many folders above the loading file's own folder `expr` is (0: that folder), for a
    name the file binds only to it, the folder expression itself, and its `.parent` /
    `os.path.dirname(…)`; None for anything else."""
    if isinstance(expr, ast.Name):
        return 0 if expr.id in _file_folders(ctx) else None
    if _is_file_folder(expr):
        return 0
    if isinstance(expr, ast.Attribute) and expr.attr == "parent":
        inner = _above_file(ctx, expr.value)
    elif isinstance(expr, ast.Call) and dotted(expr.func) in ("os.path.dirname", "path.dirname"):
        inner = _above_file(ctx, expr.args[0]) if len(expr.args) == 1 else None
    else:
        return None
    return None if inner is None else inner + 1


def _file_folders(ctx: Context) -> frozenset[str]:
    """Names the file binds only to its own folder (`os.path.dirname(__file__)`,
    `Path(__file__).parent`, through `abspath`/`realpath`/`resolve()`): every binding of the
    name anywhere in the file counts, so a second one (a loop, an import, `+=`, a function's
    own assignment or parameter) rules it out."""
    got = ctx.memo.get("file_folders")
    if got is None:
        values: dict[str, list[ast.expr | None]] = {}
        for n in ast.walk(ctx.module) if "__file__" in ctx.text else ():
            for target, value in _bindings(n):
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        values.setdefault(name.id, []).append(value if name is target else None)
        got = frozenset(
            n for n, vs in values.items() if all(v is not None and _is_file_folder(v) for v in vs)
        )
        ctx.memo["file_folders"] = got
    return got  # type: ignore[return-value]


def _bindings(n: ast.AST) -> list[tuple[ast.AST, ast.expr | None]]:
    """(target, value) of what a node binds; value None where it is not one plain value."""
    if isinstance(n, ast.Assign):
        return [(t, n.value) for t in n.targets]
    if isinstance(n, ast.AnnAssign):
        return [(n.target, n.value)]
    if isinstance(n, (ast.AugAssign, ast.NamedExpr, ast.For, ast.AsyncFor, ast.comprehension)):
        return [(n.target, None)]
    if isinstance(n, ast.withitem) and n.optional_vars is not None:
        return [(n.optional_vars, None)]
    if isinstance(n, (ast.Import, ast.ImportFrom)):
        return [(ast.Name(name), None) for name in imported_names(n)]
    if isinstance(n, ast.arg):  # a parameter of that name: the caller's folder
        return [(ast.Name(n.arg), None)]
    return []


def _is_file_folder(expr: ast.expr) -> bool:
    text = ast.unparse(expr).replace(" ", "")
    return text in FILE_FOLDER


def _saved_here(ctx: Context) -> bool:
    """The function also calls `jit.save`: a round trip in one process, on one device."""
    f = ctx.func
    return f is not None and any(
        isinstance(n, ast.Call) and dotted(n.func).endswith("jit.save") for n in ast.walk(f.node)
    )


def _jit_load(ctx: Context, node: ast.Call) -> None:
    # torch.jit.load(f, map_location=None, _extra_files=None)
    if len(node.args) >= 2 or any(k.arg == "map_location" for k in node.keywords):
        return
    if _saved_here(ctx):
        return
    ctx.report(
        "TD103",
        node,
        "`torch.jit.load` without `map_location` fails on a CPU machine for a module saved on GPU",
        'torch.jit.load(…, map_location="cpu") (or your device variable)',
        confidence="medium",
    )


# torch.hub.load_state_dict_from_url (alias torch.utils.model_zoo.load_url) unpickles what it
# downloads with torch.load(weights_only=weights_only), whose default stays False even where
# torch.load's became True (torch 2.13's hub.py); the argument exists from torch 2.1 on
# (pytorch/pytorch#98479, merged 2023-04-11). facebookresearch/audiocraft's loaders.py, the
# second blind corpus (benchmarks/scan_blind2), was missed without it.
URL_LOADS = frozenset(["hub.load_state_dict_from_url", "utils.model_zoo.load_url"])
URL_WEIGHTS_ONLY = (2, 1)


def _hash_checked(ctx: Context, node: ast.Call) -> bool:
    """check_hash=True (5th positional) on a URL the code fixes: the download must match the
    SHA-256 prefix in that URL's file name, so it is the file the project published (MiDaS's
    hubconf.py, a lookalike of the fourth blind corpus). A URL from a caller proves nothing:
    whoever picks the URL picks the hash (audiocraft's loaders.py stays flagged)."""
    value = next((k.value for k in node.keywords if k.arg == "check_hash"), None)
    if value is None and len(node.args) > 4:
        value = node.args[4]
    if not (isinstance(value, ast.Constant) and value.value is True):
        return False
    url = path_argument(node, 0, "url")
    return url is not None and _constant_text(ctx, url)


MAX_TEXTS = 16  # the strings a path may be: more say nothing


def _constant_text(ctx: Context, expr: ast.expr) -> bool:
    """A string literal, or a name the function assigns only string literals to."""
    return _constant_texts(ctx, expr) is not None


def _constant_texts(ctx: Context, expr: ast.expr) -> set[str] | None:
    """The strings of a string literal, or of a name (not a parameter) the function assigns
    only string literals to, or, where the function binds it nowhere, the module's top level
    (`TRAIN_PATH = "data/train.pt"`); a sum of such texts (`best_model_path +
    "best_lstm.pth"`, the committed best models of a forecasting project, blind set 394);
    None for anything else."""
    if isinstance(expr, ast.Constant):
        return {expr.value} if isinstance(expr.value, str) else None
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        left, right = _constant_texts(ctx, expr.left), _constant_texts(ctx, expr.right)
        if left is None or right is None or len(left) * len(right) > MAX_TEXTS:
            return None
        return {a + b for a in left for b in right}
    if not isinstance(expr, ast.Name):
        return None
    if ctx.func is not None and expr.id in ctx.func.params():
        return None
    if ctx.func is not None and _local(ctx, expr.id):
        values = assigned_values(ctx.func.node, expr.id)  # none: a loop variable, `with … as`
    else:  # a load at the top level may read what its own `if __main__` block binds
        values = _module_constants(ctx, nested=ctx.func is None).get(expr.id, [])
    if not values:
        return None
    if not all(isinstance(v, ast.Constant) and isinstance(v.value, str) for v in values):
        return None
    return {str(v.value) for v in values if isinstance(v, ast.Constant)}


def _local(ctx: Context, name: str) -> bool:
    """Does the current function bind `name` (a parameter, an assignment, a loop)?"""
    assert ctx.func is not None
    return name in ctx.func.params() or any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
        for n in ast.walk(ctx.func.node)
    )


def _module_constants(ctx: Context, nested: bool = False) -> dict[str, list[ast.expr]]:
    key = f"module_constants:{nested}"
    got = ctx.memo.get(key)
    if got is None:
        got = ctx.memo[key] = module_constants(ctx.module, nested)
    return got  # type: ignore[return-value]


def imported_name(ctx: Context, node: ast.Call) -> tuple[str, str] | None:
    """(module, name) when the load's path is a name the file imports at its top level from
    a module of the project (`from config import TRAIN_PATH`; mas_music_generation, set 250):
    project.py looks the module up and reads the constant there."""
    path = path_argument(node, 0, "f")
    if not isinstance(path, ast.Name):
        return None
    if ctx.func is not None and _local(ctx, path.id):
        return None
    found = reexports(ctx.module, path.id, star=False)
    return found[0] if found else None


def _url_load(ctx: Context, node: ast.Call) -> None:
    if any(k.arg == "weights_only" for k in node.keywords) or len(node.args) >= 7:
        return
    if _hash_checked(ctx, node):
        return
    torch_min = ctx.project.torch_min
    edit = None
    if torch_min is not None and torch_min >= URL_WEIGHTS_ONLY:
        edit = ctx.insert_after(_last_arg(node), ", weights_only=True")
    ctx.report(
        "TD102",
        node,
        "`load_state_dict_from_url` without `weights_only=True` unpickles the downloaded file: "
        "arbitrary code (its default stays False on every torch release)",
        "load_state_dict_from_url(…, weights_only=True) (torch ≥ 2.1)",
        edit,
    )


def _forwarded(ctx: Context, node: ast.Call) -> tuple[str, ...] | None:
    """`torch.load(path, **kwargs)` in `def load_checkpoint(path, **kwargs)`: the options are
    the callers'. The project view looks for a call of the function that leaves `weights_only`
    out (guided-diffusion's dist_util.load_state_dict, eai-vc's load_checkpoint: every caller
    passes map_location only; nineteenth and twentieth blind corpora). None when the `**`
    is not the function's own `**kwargs`, or the function is called through its object."""
    f = ctx.func
    star = [k.value for k in node.keywords if k.arg is None]
    if f is None or f.node.args.kwarg is None or len(star) != 1:
        return None
    if not (isinstance(star[0], ast.Name) and star[0].id == f.node.args.kwarg.arg):
        return None
    name = f.node.name
    if name in ("__init__", "forward", "__call__"):
        return None
    wanted = f".{name}" if f.cls is not None else name
    scope = "private" if name.startswith("_") else "public"
    return ("callers", wanted, "weights_only", "-1", scope)


def _forwarded_load(ctx: Context, node: ast.Call) -> None:
    torch_min = ctx.project.torch_min
    if torch_min is not None and torch_min >= WEIGHTS_ONLY_DEFAULT:
        return
    needs = _forwarded(ctx, node)
    if needs is None or any(k.arg in ("weights_only", "pickle_module") for k in node.keywords):
        return
    ctx.report(
        "TD102",
        node,
        "`torch.load(…, **kwargs)` whose callers do not pass `weights_only`: unpickling can run "
        "arbitrary code",
        "pass weights_only=True from the callers (or set it here); weights_only=False only for "
        "trusted files",
        confidence="medium",
        why="the options come from the callers of the function",
        needs=needs,
    )


def _spread_keys(ctx: Context, node: ast.Call) -> set[str | None] | None:
    """The keywords of `torch.load(path, **kwargs)` where `kwargs` is a dict the function
    builds itself: a name (not a parameter) it assigns only dict literals with string keys,
    `{'map_location': …}` in one branch and `{}` in the other (EDSR's model/__init__.py and
    its copies, RCAN's in the seventy-third blind corpus). None when they cannot be known."""
    spread = [k.value for k in node.keywords if k.arg is None]
    if ctx.func is None or len(spread) != 1 or not isinstance(spread[0], ast.Name):
        return None
    name = spread[0].id
    values = assigned_values(ctx.func.node, name)
    if name in _parameters(ctx.func.node) or not values:
        return None
    if not all(isinstance(v, ast.Dict) for v in values):
        return None
    keys: set[str | None] = {k.arg for k in node.keywords if k.arg is not None}
    given = [k for v in values for k in v.keys]  # type: ignore[attr-defined]
    for sub in ast.walk(ctx.func.node):
        if isinstance(sub, ast.Subscript) and isinstance(sub.ctx, ast.Store):
            if isinstance(sub.value, ast.Name) and sub.value.id == name:
                given.append(sub.slice)  # `kw['map_location'] = 'cpu'` (LPIPS's dist_model)
        elif isinstance(sub, ast.Attribute) and dotted(sub.value) == name:
            return None  # `kwargs.update(…)`, `kwargs.setdefault(…)`: keys unknown
    for k in given:
        if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
            return None  # `{**other}` or a computed key
        keys.add(k.value)
    return keys


def on_call(ctx: Context, node: ast.Call) -> None:
    if not node.args and not node.keywords:
        return
    if any(k.arg is None for k in node.keywords):
        if ctx.torch_call(node) == "load":
            keys = _spread_keys(ctx, node)
            if keys is None:
                _forwarded_load(ctx, node)
            elif not (_exchanged(ctx, node) or _packaged(ctx, node) or _saves_by_mistake(node)):
                # map_location may be in one branch only: TD101 stays quiet; weights_only
                # is in none
                _weights_only(ctx, node, keys, None)
        return  # otherwise **kwargs may carry the arguments: unsure, so quiet
    name = ctx.torch_call(node)
    if name == "load":
        _torch_load(ctx, node)
    elif name == "jit.load":
        _jit_load(ctx, node)
    elif name in URL_LOADS:
        _url_load(ctx, node)


CHECK = Check(
    rules=("TD101", "TD102", "TD103"),
    words=("load",),
    calls=frozenset(["load", "load_state_dict_from_url", "load_url"]),
    on_call=on_call,
)
