"""bench/scaling's cost model, without timing anything: the step counts of each algorithm as
src/comm implements them, the fit recovering known alpha, beta, gamma from synthetic timings,
kolo's selection rule as allreduce.cc writes it, and the projection's arithmetic."""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "scaling"))
import model  # noqa: E402
import project  # noqa: E402


@pytest.mark.parametrize("p,steps,data", [(2, 2, 1.0), (3, 4, 4 / 3), (4, 6, 1.5), (8, 14, 1.75)])
def test_ring_moves_2_p_minus_1_over_p_of_the_buffer_in_2_p_minus_1_steps(p, steps, data):
    a, b, c = model.ring(p)
    assert a == steps
    assert b == pytest.approx(data)
    assert c == pytest.approx((p - 1) / p)


@pytest.mark.parametrize("p,steps,folds", [(2, 1, 1), (3, 3, 2), (4, 2, 2), (8, 3, 3),
                                           (6, 4, 3)])
def test_recursive_doubling_swaps_whole_buffers_and_folds_extra_ranks_in_and_out(p, steps, folds):
    # p = 3: ranks 0 and 1 fold (one step), ranks 1 and 2 swap (one), 1 hands 0 the result (one).
    a, b, c = model.recursive_doubling(p)
    assert (a, b, c) == (steps, steps, folds)


def test_one_rank_costs_nothing():
    for algorithm in list(model.FLAT.values()) + [model.shared_memory]:
        assert algorithm(1, 1 << 20) == (0.0, 0.0, 0.0)


def test_halving_doubling_has_the_rings_bandwidth_and_logarithmic_steps():
    for p in (4, 16, 256):
        assert model.halving_doubling(p)[0] == 2 * math.log2(p)
        assert model.halving_doubling(p)[1] == pytest.approx(model.ring(p)[1])


def test_2d_ring_uses_the_squarest_grid_and_fewer_steps_than_the_ring():
    assert model.torus_shape(16) == (4, 4)
    assert model.torus_shape(12) == (3, 4)
    assert model.torus_shape(7) == (1, 7)  # a prime: a plain ring
    assert model.ring_2d(16)[0] == 2 * (4 + 4 - 2)
    assert model.ring_2d(7)[0] == model.ring(7)[0]
    assert model.ring_2d(64)[1] == pytest.approx(model.ring(64)[1])


def test_fit_recovers_known_costs_from_synthetic_timings():
    truth = model.Link(alpha=12e-6, beta=0.4e-9, gamma=0.15e-9)
    samples = []
    for p in (2, 3):
        for steps_of in (model.ring, model.recursive_doubling):
            for n in (8 * 4**k for k in range(12)):
                samples.append((steps_of(p, n), n, truth.time(steps_of(p, n), n)))
    fitted, quality = model.fit(samples)
    assert fitted.alpha == pytest.approx(truth.alpha, rel=1e-6)
    assert fitted.beta == pytest.approx(truth.beta, rel=1e-6)
    assert fitted.gamma == pytest.approx(truth.gamma, rel=1e-6)
    assert quality["median_error"] < 1e-9
    assert quality["samples"] == len(samples)


def test_fit_with_noise_stays_close_and_never_goes_negative():
    rng = random.Random(7)
    truth = model.Link(alpha=5e-6, beta=1e-9, gamma=0.0)  # no reduction cost at all
    samples = []
    for steps_of in (model.ring, model.recursive_doubling):
        for n in (8 * 4**k for k in range(12)):
            t = truth.time(steps_of(2, n), n) * (1 + rng.uniform(-0.05, 0.05))
            samples.append((steps_of(2, n), n, t))
    fitted, quality = model.fit(samples)
    assert fitted.gamma >= 0 and fitted.alpha >= 0 and fitted.beta >= 0
    assert fitted.alpha == pytest.approx(truth.alpha, rel=0.1)
    assert fitted.beta == pytest.approx(truth.beta, rel=0.1)
    assert quality["median_error"] < 0.05


def test_kolo_pick_mirrors_allreduce_cc():
    assert model.kolo_pick(2, 1, 8) == "shared_memory"
    assert model.kolo_pick(3, 1, 1 << 20, oversubscribed=True) == "ring"
    assert model.kolo_pick(3, 1, 8, oversubscribed=True) == "shared_memory"
    assert model.kolo_pick(4, 2, 8) == "hierarchical"
    assert model.kolo_pick(3, 3, 32 * 1024) == "recursive_doubling"
    assert model.kolo_pick(3, 3, 64 * 1024) == "ring"
    assert model.kolo_pick(256, 256, 512) == "recursive_doubling"  # fewer elements than ranks
    assert model.kolo_pick(8, 8, 1 << 20) == "halving_doubling"
    assert model.kolo_pick(7, 7, 1 << 20) == "ring"
    assert model.kolo_pick(12, 12, 16 << 20) == "ring"  # the extra ranks' fold-in outweighs


def test_recursive_doubling_wins_small_and_ring_wins_large_on_a_network():
    link = model.link_for_network(25, alpha=20e-6, gamma=0.1e-9)
    for p in (8, 64, 256):
        assert project.flat_choice(p, 8, link)[2] in ("recursive_doubling", "halving_doubling",
                                                      "tree")
        small = model.flat_time("recursive_doubling", p, 8, link)
        assert small < model.flat_time("ring", p, 8, link)
        big = 1 << 30
        assert model.flat_time("ring", p, big, link) < model.flat_time("recursive_doubling", p,
                                                                         big, link)
    # The crossover grows with the rank count: the ring's 2(p-1) steps cost ever more.
    assert project.crossover(8, link) < project.crossover(64, link) < project.crossover(256, link)


def test_workloads_split_into_fusion_buffers():
    assert project.buffers(100) == [100.0]
    parts = project.buffers(4e9)
    assert len(parts) == 30 and sum(parts) == pytest.approx(4e9)
    assert max(parts) == project.FUSION_BYTES


def test_hierarchical_on_one_rank_per_host_is_the_flat_algorithm():
    net = model.Link(10e-6, 1e-9, 0.1e-9)
    local = model.Link(1e-6, 0.1e-9, 0.1e-9)
    n = 1 << 20
    assert model.hierarchical_time(8, 1, n, net, local) == pytest.approx(
        model.flat_time(model.kolo_flat_pick(8, n), 8, n, net))


@pytest.mark.parametrize("p,limit", [(2, 65536), (4, 65536), (6, 65536), (8, 93449),
                                     (16, 143705), (256, 1106183)])
def test_the_scaled_limit_matches_allreduce_choice_cc(p, limit):
    # The same figures tests/cpp/comm/allreduce_choice_test.cc checks on the C++ side.
    assert model.recursive_doubling_limit(64 * 1024, p) == pytest.approx(limit, abs=1)
    assert model.kolo_flat_pick(p, limit - 4) == "recursive_doubling"
    above = "halving_doubling" if p >= 8 else "ring"  # powers of two from 8: every size
    assert model.kolo_flat_pick(p, limit + 4) == above
    assert model.kolo_flat_pick(p, limit + 4, halving=False) == "ring"
    assert model.kolo_flat_pick(p, 70000, scaled=False) == ("ring" if p < 8 else above)


@pytest.mark.parametrize("p,steps,sent,folded", [(8, 6, 1.75, 0.875), (12, 8, 3.75, 1.875),
                                                 (7, 6, 3.5, 1.75), (16, 8, 1.875, 0.9375)])
def test_halving_doubling_steps_as_allreduce_halving_doubling_cc(p, steps, sent, folded):
    # 12 ranks: 4 extra ranks fold into a core of 8 (one step, their buffer sent and folded),
    # 3 halving + 3 doubling rounds, the result handed back (one step, one more buffer).
    assert model.halving_doubling(p) == (steps, pytest.approx(sent), pytest.approx(folded))


def test_halving_doubling_limit_matches_allreduce_choice_cc():
    # The figures tests/cpp/comm/allreduce_choice_test.cc checks on the C++ side.
    for p in range(1, 8):
        assert model.halving_doubling_limit(64 * 1024, p) == 0
    for p in (8, 16, 256, 4096):
        assert model.halving_doubling_limit(64 * 1024, p) == math.inf
    limit = 64 * 1024 * (14 / 2.875) / (4 / 1.75)  # 12 ranks
    assert model.halving_doubling_limit(64 * 1024, 12) == pytest.approx(limit, abs=1)
    assert model.kolo_flat_pick(12, limit - 4) == "halving_doubling"
    assert model.kolo_flat_pick(12, limit + 4) == "ring"
    assert model.kolo_flat_pick(12, model.recursive_doubling_limit(64 * 1024, 12) - 4) == \
        "recursive_doubling"
    for p in range(9, 300):
        if p & (p - 1):
            assert (model.recursive_doubling_limit(64 * 1024, p)
                    <= model.halving_doubling_limit(64 * 1024, p) < math.inf)
    # Below 8 ranks nothing changed: ring above the recursive-doubling limit.
    for p in range(2, 8):
        assert model.kolo_flat_pick(p, 1 << 20) == "ring"


def test_the_cross_host_stage_of_hierarchical_picks_halving_doubling_on_8_hosts():
    net = model.Link(10e-6, 1e-9, 0.1e-9)
    local = model.Link(1e-6, 0.1e-9, 0.1e-9)
    n = 64 << 20
    # 64 ranks, 8 per host: each slice (8 MiB) is allreduced among 8 hosts.
    expected_across = (model.flat_time("halving_doubling", 8, n / 8, net)
                       + (8 - 1) * model.halving_doubling(8)[1] * (n / 8) * net.beta)
    inside = 2 * (7 * local.alpha + 7 / 8 * n * local.beta) + 7 / 8 * n * local.gamma
    assert model.hierarchical_time(64, 8, n, net, local) == pytest.approx(inside + expected_across)
