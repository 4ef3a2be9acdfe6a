"""bench/scaling/collective_steps.py: the step counts of broadcast and allgather, and the mirror of
kolo's broadcast and allgather choices (src/comm/broadcast_choice.cc, allgather_choice.cc); and
plot.py's PNGs of the projections. Pure arithmetic, nothing timed."""

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "scaling"))
import collective_steps as steps  # noqa: E402
import model  # noqa: E402
import plot  # noqa: E402

MIB = 1 << 20


@pytest.mark.parametrize("of", [*steps.BROADCAST.values(), *steps.ALLGATHER.values()])
def test_one_rank_costs_nothing(of):
    assert of(1, 1e6) == (0.0, 0.0, 0.0)


def test_on_two_ranks_every_broadcast_is_one_transfer_of_the_buffer():
    for n in (8.0, 3 * MIB):
        a, b, _ = steps.broadcast_tree(2, n)
        assert (a, b) == (1.0, 1.0)
        _, chain_bytes, _ = steps.broadcast_chain(2, n)
        assert chain_bytes == pytest.approx(1.0)  # one chunk after another, no fill


def test_the_trees_root_sends_the_buffer_once_per_level():
    # 8 ranks: depth 3, so the root's link carries 3n, plus the last segment's two more levels.
    a, b, _ = steps.broadcast_tree(8, 64 * MIB)
    assert a == 3
    assert b == pytest.approx(3 + 2 * steps.TREE_SEGMENT_BYTES / (64 * MIB))


def test_the_chain_carries_the_buffer_once_plus_its_fill():
    n = 64 * MIB  # 128 chunks
    a, b, _ = steps.broadcast_chain(10, n)
    assert a == 9  # the first chunk's hops; the others' latencies overlap their transfers
    assert b == pytest.approx((8 + 128) / 128)


def test_allgathers_move_the_same_bytes_in_different_step_counts():
    for p in (3, 8, 100):
        ring, bruck = steps.allgather_ring(p, 1.0), steps.allgather_bruck(p, 1.0)
        assert ring[1] == bruck[1] == pytest.approx((p - 1) / p)
        assert ring[0] == p - 1
        assert bruck[0] == math.ceil(math.log2(p))


def test_kolos_doubling_pays_two_steps_and_the_output_for_extra_ranks():
    assert steps.allgather_doubling(8, 1.0) == (3.0, pytest.approx(7 / 8), 0.0)
    a, b, _ = steps.allgather_doubling(6, 1.0)  # core of 4, two extra ranks
    assert a == 2 + 2
    assert b == pytest.approx(1 / 6 + 3 / 4 + 1)


@pytest.mark.parametrize("p, total, pick", [(2, 64, "ring"), (3, 64, "ring"), (4, 64, "doubling"),
                                            (5, 64, "bruck"), (6, 64, "bruck"),
                                            (7, 64, "bruck"), (12, 64, "bruck"),
                                            (255, 64, "bruck"), (256, 64, "doubling"),
                                            (8, 512 * 1024, "doubling"),
                                            (8, 512 * 1024 + 1, "ring"),
                                            (6, 512 * 1024, "bruck"),
                                            (6, 512 * 1024 + 1, "ring")])
def test_the_allgather_choice_matches_allgather_choice_cc(p, total, pick):
    # The same cases tests/cpp/comm/allgatherv_test.cc checks on the C++ side.
    assert steps.allgather_doubling_serves(p, total) is (pick == "doubling")
    assert steps.allgather_bruck_serves(p, total) is (pick == "bruck")
    assert steps.kolo_pick("allgather", p, total) == pick


def test_up_to_the_limit_kolos_allgather_is_the_models_fastest():
    # 3..256 ranks, 25 and 100 Gb/s: doubling and Bruck tie on powers of two, Bruck beats
    # doubling everywhere else (one step and one pass of the output fewer), and the ring only
    # ties on 3 ranks.
    for rate in (25, 100):
        link = model.link_for_network(rate, 12.7e-6, 0.0)
        for p in range(3, 257):
            for n in (8.0, 8 << 10, 64 << 10, 512 << 10):
                times = {name: link.time(of(p, n), n) for name, of in steps.ALLGATHER.items()}
                pick = steps.kolo_pick("allgather", p, n)
                assert times[pick] <= min(times.values()) * (1 + 1e-9), (rate, p, n, times)


@pytest.mark.parametrize("p, limit", [(2, math.inf), (3, MIB), (7, 5 * MIB // 2),
                                      (8, 7 * MIB // 2), (256, 255 * MIB // 2)])
def test_the_chain_limit_matches_broadcast_choice_cc(p, limit):
    # The same figures tests/cpp/comm/broadcast_test.cc checks on the C++ side.
    assert steps.broadcast_chain_limit(p) == limit


@pytest.mark.parametrize("p, limit", [(2, math.inf), (7, math.inf), (8, 282309),
                                      (64, 1398102), (256, 4952443)])
def test_the_scatter_allgather_limit_matches_broadcast_choice_cc(p, limit):
    assert steps.broadcast_scatter_allgather_limit(p) == limit


def test_kolo_picks_the_tree_for_small_buffers_and_the_chain_for_large():
    assert steps.kolo_pick("broadcast", 8, 64 << 10) == "tree"
    assert steps.kolo_pick("broadcast", 8, 1 * MIB) == "scatter_allgather"
    assert steps.kolo_pick("broadcast", 4, 1 * MIB) == "tree"
    assert steps.kolo_pick("broadcast", 8, 16 * MIB) == "chain"
    assert steps.kolo_pick("broadcast", 256, 97.5 * MIB) == "scatter_allgather"
    assert steps.kolo_pick("broadcast", 2, 1 << 30) == "tree"
    assert steps.kolo_pick("allgather", 64, 1 << 30) == "ring"
    assert steps.kolo_pick("allgather", 64, 8 << 10) == "doubling"


def test_on_a_network_the_chain_beats_the_tree_well_above_its_limit():
    link = model.link_for_network(25, 20e-6, 0.0)
    for p in (3, 8, 64, 256):
        n = 4 * steps.broadcast_chain_limit(p)
        tree = link.time(steps.broadcast_tree(p, n), n)
        chain = link.time(steps.broadcast_chain(p, n), n)
        assert chain < tree, (p, n, chain, tree)
    small = 64 << 10
    assert (link.time(steps.broadcast_tree(64, small), small)
            < link.time(steps.broadcast_chain(64, small), small))


@pytest.mark.parametrize("rate", [25, 100])
def test_from_eight_ranks_kolo_never_takes_the_chain_where_scatter_allgather_wins(rate):
    # The model at the projection's alpha (quiet-machine fit + a switch hop): above the chain's
    # limit it is within 5% of the fastest, at every rank count 8..256.
    link = model.link_for_network(rate, 12.7e-6, 0.0)
    sizes = [2.0 ** (k / 4) for k in range(40, 124)]  # 1 KiB .. 2 GiB
    for p in range(8, 257):
        for n in sizes:
            if steps.kolo_broadcast_pick(p, n) != "chain":
                continue
            times = {name: link.time(of(p, n), n) for name, of in steps.BROADCAST.items()}
            assert times["chain"] <= 1.05 * min(times.values()), (p, n, times)


def test_at_100_gbit_kolos_broadcast_is_within_eleven_percent_of_the_fastest():
    # The limits follow 100 Gb/s; at 25 Gb/s the tree stays where scatter + allgather would win
    # (broadcast_choice.h says why).
    link = model.link_for_network(100, 12.7e-6, 0.0)
    sizes = [2.0 ** (k / 4) for k in range(12, 124)]
    for p in range(8, 257, 3):
        for n in sizes:
            times = {name: link.time(of(p, n), n) for name, of in steps.BROADCAST.items()}
            pick = steps.kolo_broadcast_pick(p, n)
            assert times[pick] <= 1.11 * min(times.values()), (p, n, pick, times)


NETWORK = model.Link(7.7e-6, 0.0, 0.0)  # the emulated link's alpha; beta comes from the line rate
LOCAL = model.Link(1e-6, 1e-10, 1e-10)


def test_without_matplotlib_the_plots_are_skipped_saying_so(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    for line, path in ((plot.collectives(tmp_path / "c.png", NETWORK), tmp_path / "c.png"),
                       (plot.allreduce(tmp_path / "a.png", NETWORK, LOCAL), tmp_path / "a.png")):
        assert "skipped, matplotlib is not installed" in line
        assert not path.exists()


def test_with_matplotlib_both_plots_are_pngs(tmp_path):
    pytest.importorskip("matplotlib")
    for line, path in ((plot.collectives(tmp_path / "c.png", NETWORK), tmp_path / "c.png"),
                       (plot.allreduce(tmp_path / "a.png", NETWORK, LOCAL), tmp_path / "a.png")):
        assert line.startswith("# plot: ") and line.endswith(path.name)
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
