"""The benches' real-Horovod peer, without Horovod: how bench/horovod_reference/launch.py starts
it, how bench/perop pairs its rows with kolo's, and how bench/train_vs_ddp leaves it out (saying
so) without --horovod-python and reports the kolo/Horovod ratio with it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def load(path: Path, name: str) -> ModuleType:
    """A bench script as a module under a name of its own (both benches have a run.py); its
    folder on sys.path for its own imports."""
    sys.path.insert(0, str(path.parent))
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module


pytest.importorskip("torch", reason="bench/train_vs_ddp's models; scripts/setup.sh installs it")


launch = load(BENCH / "horovod_reference" / "launch.py", "horovod_reference_launch")
perop = load(BENCH / "perop" / "run.py", "perop_run")
report = load(BENCH / "train_vs_ddp" / "report.py", "train_vs_ddp_report")
train_run = load(BENCH / "train_vs_ddp" / "run.py", "train_vs_ddp_run")


def test_horovodrun_uses_the_venvs_own_launcher_on_localhost() -> None:
    command = launch.horovodrun("/v/bin/python", 3, "gloo", ["/v/bin/python", "x.py"])
    assert command == ["/v/bin/horovodrun", "-np", "3", "-H", "localhost:3", "--gloo",
                       "/v/bin/python", "x.py"]
    pinned = launch.horovodrun("/v/bin/python", 2, "mpi", ["p"], pin=True)
    assert pinned[5] == "--mpi" and pinned[6:9] == launch.PIN[:3] and pinned[-1] == "p"
    with pytest.raises(ValueError, match="'nccl'"):
        launch.horovodrun("/v/bin/python", 2, "nccl", ["p"])


def test_environment_cannot_pick_up_kolos_horovod_alias() -> None:
    env = launch.environment("/v/bin/python", {"PATH": "/kolo/bin:/usr/bin",
                                               "PYTHONPATH": "/kolo/python",
                                               "VIRTUAL_ENV": "/kolo", "HOME": "/root"})
    assert env == {"PATH": "/v/bin:/kolo/bin:/usr/bin", "HOME": "/root"}


def test_perop_ratio_pairs_horovods_row_with_kolos() -> None:
    medians = {"hvd.torch allreduce 8 B (named)": 20.0,
               launch.LABEL + "hvd.torch allreduce 8 B (named)": 2000.0,
               "kolo numpy allreduce 8 B (named)": 10.0}
    assert perop.horovod_ratio("hvd.torch allreduce 8 B (named)", medians) == pytest.approx(100)
    assert perop.horovod_ratio("kolo numpy allreduce 8 B (named)", medians) is None
    assert perop.horovod_ratio(launch.LABEL + "hvd.torch allreduce 8 B (named)", medians) is None


def test_train_vs_ddp_skips_horovod_without_its_python_and_says_so() -> None:
    runners, notes = train_run.select_runners(["kolo", "horovod", "ddp"], None, True)
    assert runners == ["kolo", "ddp"]
    assert len(notes) == 1 and notes[0].startswith("horovod skipped")
    runners, notes = train_run.select_runners(["kolo", "horovod", "kolo-mpi"], "/v/bin/python",
                                              False)
    assert runners == ["kolo", "horovod"] and notes[0].startswith("kolo-mpi skipped")
    assert "horovod" not in train_run.commands(2, "kolorun")
    assert train_run.commands(2, "kolorun", "/v/bin/python")["horovod"][:6] == [
        "/v/bin/horovodrun", "-np", "2", "-H", "localhost:2", "--gloo"]


def one_run(samples_per_s: float) -> dict:
    return {"samples_per_s": samples_per_s, "samples_per_s_whole_run": samples_per_s,
            "peak_rss_mib": 300.0, "cpu_ms_per_step": 5.0, "losses": [2.0, 1.5],
            "eval_loss": 1.4, "eval_accuracy": 0.5}


def test_report_gives_the_kolo_over_horovod_ratio_and_checks_its_convergence() -> None:
    runs = {"mlp": {"kolo": [one_run(600), one_run(500), one_run(700)],
                    "horovod": [one_run(250), one_run(200), one_run(300)],
                    "ddp": [one_run(550), one_run(550), one_run(550)]}}
    text = report.markdown(runs, {})
    assert "Horovod 0.28.1 |" in text
    assert "kolo/Horovod 0.28.1 2.400 samples/s" in text  # medians 600 / 250
    assert "convergence horovod vs DDP: MATCH" in text


torch_level = load(BENCH / "compare" / "torch_level.py", "compare_torch_level")


def test_torch_level_reads_tagged_rows_and_tabulates_horovod_over_kolo() -> None:
    assert torch_level.parse_size("256K") == 256 << 10 and torch_level.parse_size("8") == 8
    text = "[0]<stdout>:allreduce\t8\t1100.50\n[1,0]<stdout>:broadcast\t4096\t30\nnoise\n"
    assert torch_level.rows(text) == {("allreduce", 8): 1100.5, ("broadcast", 4096): 30.0}
    table = torch_level.ratio_table({("allreduce", 8): [10.0, 20.0, 30.0],
                                     ("broadcast", 8): [5.0]},
                                    {("allreduce", 8): [900.0, 1000.0, 5000.0]})
    assert table[2] == "| allreduce | 8 | 20.0 | 1000.0 | 50.00 |"
    assert table[3] == "| broadcast | 8 | 5.0 | - | - |"  # Horovod did not run it


def test_rank_tags_are_stripped_even_when_lines_arrive_glued() -> None:
    # horovodrun --mpi: mpirun's "[job,rank]" tag can follow a line without a newline between.
    text = "[1,0]<stdout>:a\t1\t10.90[1,0]<stdout>:b\t2\t3\n[0]<stdout>:c\nplain\n"
    assert launch.untagged_lines(text) == ["a\t1\t10.90", "b\t2\t3", "c", "plain"]
    assert perop.rows(text) == {"a": (1.0, 10.9), "b": (2.0, 3.0)}
