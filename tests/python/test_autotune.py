"""Autotune (HOROVOD_AUTOTUNE / kolorun --autotune) under kolorun -np 2 and 3: it stops after its
budget, every rank ends with the same parameters, and those are the best-scoring trial in the
log, which has one row per trial."""

import csv

import pytest

from conftest import run_job

QUICK = {"HOROVOD_AUTOTUNE_WARMUP_SAMPLES": "1", "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE": "2",
         "KOLO_AUTOTUNE_SAMPLES_PER_TRIAL": "2"}


def read_log(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows, "empty autotune log"
    trials, best = rows[:-1], rows[-1]
    assert best["trial"] == "best", rows
    assert [r["trial"] for r in trials] == [str(i + 1) for i in range(len(trials))]
    return trials, best


def tuned_values(result, size):
    values = set()
    for rank in range(size):
        line = next(l for l in result.lines_of(rank) if " tuned " in l)
        values.add(tuple(line.split(" tuned ")[1].split()))
    assert len(values) == 1, f"ranks disagree: {values}"
    return values.pop()


def key(row):
    return (float(row["fusion_threshold_mb"]), float(row["cycle_time_ms"]),
            row["cache_enabled"])


@pytest.mark.parametrize("np_", [2, 3])
def test_autotune_converges_on_the_best_trial(np_, tmp_path):
    log = tmp_path / "autotune.csv"
    env = dict(QUICK, HOROVOD_AUTOTUNE="1", HOROVOD_AUTOTUNE_LOG=str(log))
    result = run_job(np_, "autotune_steps.py", env=env, timeout=300)
    result.assert_ok(np_)
    trials, best = read_log(log)
    # Coordinate descent over 6 thresholds, 6 cycle times and the cache, no combination twice.
    assert 6 <= len(trials) <= 13, trials
    assert len({key(t) for t in trials}) == len(trials)
    for trial in trials:
        assert trial["samples"] == "2"
        assert float(trial["score_bytes_per_second"]) > 0
    assert key(best) in {key(t) for t in trials}
    top = max(trials, key=lambda t: float(t["score_bytes_per_second"]))
    assert float(best["score_bytes_per_second"]) == float(top["score_bytes_per_second"])
    assert key(best) == key(top)
    fusion, cycle, cache = tuned_values(result, np_)
    assert (int(fusion) / (1 << 20), float(cycle), cache) == key(best)


def test_autotune_holds_explicit_settings_constant_via_kolorun_flags(tmp_path):
    log = tmp_path / "autotune.csv"
    result = run_job(2, "autotune_steps.py", env=QUICK, timeout=300, launcher_args=(
        "--autotune", "--autotune-log-file", str(log), "--cycle-time-ms", "2"))
    result.assert_ok(2)
    trials, best = read_log(log)
    assert all(float(t["cycle_time_ms"]) == 2 for t in trials), trials
    assert len(trials) == 7  # 6 thresholds, then the cache off
    assert tuned_values(result, 2)[1] == "2"
