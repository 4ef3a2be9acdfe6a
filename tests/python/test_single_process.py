"""Without a launcher kolo runs as a world of one; using it before init() says what to do."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest


def run_python(code: str, env=None, timeout=60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env=env)


def test_world_of_one():
    proc = run_python("""
        import numpy as np, kolo
        kolo.init()
        assert (kolo.rank(), kolo.size(), kolo.local_rank(), kolo.local_size()) == (0, 1, 0, 1)
        assert (kolo.cross_rank(), kolo.cross_size()) == (0, 1)
        x = np.arange(10, dtype=np.float32)
        assert np.array_equal(kolo.allreduce(x), x)
        assert np.array_equal(kolo.allreduce(x, op=kolo.Sum, postscale_factor=2.0), 2 * x)
        assert np.array_equal(kolo.allgather(x.reshape(5, 2)), x.reshape(5, 2))
        assert np.array_equal(kolo.broadcast(x, 0), x)
        kolo.barrier()
        kolo.shutdown()
        print("single OK")
    """)
    assert proc.returncode == 0, proc.stderr
    assert "single OK" in proc.stdout


def test_background_thread_is_named_for_top_and_perf():
    proc = run_python("""
        import glob, kolo
        def names():
            return sorted(open(path).read().strip() for path in glob.glob("/proc/self/task/*/comm"))
        before = names()
        kolo.init()
        print("during", names().count("kolo-background"), "before", before.count("kolo-background"))
        kolo.shutdown()
    """)
    assert proc.returncode == 0, proc.stderr
    assert "during 1 before 0" in proc.stdout, proc.stdout


def test_use_before_init_says_to_call_init():
    proc = run_python("""
        import numpy as np, kolo
        try:
            kolo.allreduce(np.ones(2, np.float32))
        except kolo.KoloError as error:
            print("error:", error)
        try:
            kolo.rank()
        except kolo.KoloError as error:
            print("error:", error)
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("call hvd.init()") == 2, proc.stdout


def test_non_contiguous_output_is_refused():
    import kolo

    kolo.init()
    try:
        strided = np.zeros((4, 4), np.float32)[:, 0]
        # A bad argument is a ValueError, as in Horovod, and not a HorovodInternalError (which
        # elastic training would retry).
        with pytest.raises(kolo.KoloValueError, match="contiguous") as caught:
            kolo.allreduce_(strided, name="strided")
        assert isinstance(caught.value, ValueError)
        assert not isinstance(caught.value, kolo.HorovodInternalError)
    finally:
        kolo.shutdown()


def test_bad_configuration_names_the_variable():
    import os

    env = dict(os.environ, KOLO_FUSION_THRESHOLD="big")
    proc = run_python("import kolo; kolo.init()", env=env)
    assert proc.returncode != 0
    assert "KOLO_FUSION_THRESHOLD='big'" in proc.stderr, proc.stderr


def test_world_layout_from_rendezvous():
    from conftest import run_job

    result = run_job(3, "report_env.py", timeout=60)
    result.assert_ok(3)
    for rank in range(3):
        assert f"rank {rank} size 3 local {rank}/3 cross 0/1" in result.lines_of(rank), \
            result.output
