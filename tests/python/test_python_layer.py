"""The Python layer's floor (issue 12): process sets without torch, one table of handles for kolo
and kolo.torch, init() options passed to the core directly (not through os.environ), and
_core.enqueue taking one options object. Each case runs in a fresh interpreter as a world of one,
so what it imports and initializes is its own."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest


def run_python(code: str, env: dict | None = None, timeout: float = 120) -> str:
    full_env = {k: v for k, v in os.environ.items()
                if not k.startswith(("KOLO_", "HOROVOD_"))}
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env=full_env)
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc.stdout


@pytest.mark.parametrize("module", ["horovod.common.process_sets", "horovod.common.basics",
                                    "horovod.common.util", "kolo.process_sets", "kolo"])
def test_framework_free_modules_do_not_import_torch(module):
    out = run_python(f"""
        import sys
        import {module}
        loaded = sorted(m for m in sys.modules if m == "torch" or m.startswith("torch."))
        print("torch modules:", loaded[:5])
    """)
    assert "torch modules: []" in out, out


def test_process_set_objects_are_shared_by_common_and_torch():
    pytest.importorskip("torch")
    out = run_python("""
        import horovod.common.process_sets as common
        import horovod.torch as hvd
        import kolo.process_sets
        assert hvd.ProcessSet is common.ProcessSet is kolo.process_sets.ProcessSet
        assert hvd.global_process_set is common.global_process_set
        assert hvd.add_process_set is common.add_process_set
        hvd.init()
        assert common.process_sets() == [hvd.global_process_set]
        assert common.global_process_set.ranks == [0]
        print("shared OK")
    """)
    assert "shared OK" in out


# (environment, init argument, expected dynamic_process_sets): the argument wins over the
# environment; without it the environment still decides, as before.
DYNAMIC_CASES = [
    ({}, None, False),
    ({"HOROVOD_DYNAMIC_PROCESS_SETS": "1"}, None, True),
    ({"KOLO_DYNAMIC_PROCESS_SETS": "1"}, None, True),
    ({}, '"dynamic"', True),
    ({"HOROVOD_DYNAMIC_PROCESS_SETS": "0"}, '"dynamic"', True),
    ({"KOLO_DYNAMIC_PROCESS_SETS": "off"}, '"DYNAMIC"', True),
]


@pytest.mark.parametrize("env,argument,expected", DYNAMIC_CASES)
def test_init_passes_dynamic_process_sets_to_the_core(env, argument, expected):
    call = "kolo.init()" if argument is None else f"kolo.init(process_sets={argument})"
    out = run_python(f"""
        import os, kolo
        before = dict(os.environ)
        {call}
        assert dict(os.environ) == before, "init() changed the environment"
        print("dynamic:", kolo._core.config()["dynamic_process_sets"])
    """, env=env)
    assert f"dynamic: {expected}" in out, out


def test_dynamic_from_init_does_not_outlive_the_session():
    # Through os.environ, "dynamic" stuck to every later init() of the process (and to its
    # children); passed directly it belongs to the one init() that was given it.
    out = run_python("""
        import kolo
        kolo.init(process_sets="dynamic")
        first = kolo._core.config()["dynamic_process_sets"]
        kolo.shutdown()
        kolo.init()
        print("dynamic:", first, kolo._core.config()["dynamic_process_sets"])
    """)
    assert "dynamic: True False" in out, out


def test_torch_init_dynamic_allows_adding_sets_without_the_environment():
    pytest.importorskip("torch")
    out = run_python("""
        import os
        import horovod.torch as hvd
        hvd.init(process_sets="dynamic")
        assert "HOROVOD_DYNAMIC_PROCESS_SETS" not in os.environ
        try:
            hvd.add_process_set([0])
        except ValueError as error:  # a world of one: {0} is the global set again
            print("refused:", error)
        hvd.shutdown()
        hvd.init()
        try:
            hvd.add_process_set([0])
        except ValueError as error:
            print("not dynamic:", error)
    """)
    assert "refused:" in out and "already exists" in out, out
    assert "not dynamic:" in out and "HOROVOD_DYNAMIC_PROCESS_SETS" in out, out


def test_init_refuses_a_bad_process_sets_argument():
    out = run_python("""
        import kolo
        try:
            kolo.init(process_sets="static")
        except ValueError as error:
            print("refused:", error)
        print("initialized:", kolo.is_initialized())
    """)
    assert "refused: process_sets must be a list" in out and "'static'" in out, out
    assert "initialized: False" in out, out


def test_enqueue_takes_one_keyword_options_object():
    out = run_python("""
        import numpy as np, kolo
        from kolo import _core
        options = _core.EnqueueOptions(op=_core.OP_ALLREDUCE, name="x", reduce_op=_core.REDUCE_SUM,
                                       postscale=3.0)
        assert (options.root, options.prescale, options.process_set, options.splits,
                options.group_id, options.group_size, options.invalid) == (0, 1.0, 0, [], 0, 0, "")
        try:
            _core.EnqueueOptions(_core.OP_ALLREDUCE, "x")
        except TypeError:
            print("positional refused")
        kolo.init()
        data = np.arange(4, dtype=np.float32)
        handle = _core.enqueue(options, data)
        _core.wait(handle)
        print("in place:", data.tolist())
        bad = _core.EnqueueOptions(op=_core.OP_ALLREDUCE, name="y", group_id=7, group_size=0)
        try:
            _core.enqueue(bad, data)
        except kolo.KoloValueError as error:
            print("refused:", error)
    """)
    assert "positional refused" in out, out
    assert "in place: [0.0, 3.0, 6.0, 9.0]" in out, out
    assert "refused: tensor 'y': a group needs at least one member" in out, out


def test_kolo_and_torch_share_one_handle_table():
    pytest.importorskip("torch")
    out = run_python("""
        import numpy as np, torch, kolo, kolo._handles
        import horovod.torch as hvd
        hvd.init()
        assert hvd.synchronize is kolo.synchronize and hvd.poll is kolo.poll
        t = torch.ones(3)
        handle = hvd.allreduce_async_(t, op=hvd.Sum, prescale_factor=2.0)
        assert kolo.synchronize(handle) is t  # torch's in-place result, through kolo
        group = hvd.grouped_allreduce_async([torch.ones(2), torch.ones(1)], op=hvd.Sum)
        array = kolo.allreduce_async(np.ones(2), op=kolo.Sum)
        assert kolo.poll(group) in (True, False)
        results = kolo.synchronize(group)
        assert [r.tolist() for r in results] == [[1.0, 1.0], [1.0]]
        assert hvd.synchronize(array).tolist() == [1.0, 1.0]
        assert t.tolist() == [2.0, 2.0, 2.0]
        assert not kolo._handles._in_flight and not kolo._handles._groups
        assert not kolo._handles._direct and not kolo._handles._direct_inputs
        print("one table OK")
    """)
    assert "one table OK" in out, out
