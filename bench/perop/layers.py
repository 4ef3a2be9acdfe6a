"""Where the microseconds of one blocking 8-byte allreduce go, layer by layer, from Python:

    kolorun -np 2 bash -c 'exec taskset -c "$KOLO_RANK" "$@"' x python3 bench/perop/layers.py

Rank 0 prints the median (us) of each form, from the full horovod.torch call down to the core's
own enqueue + wait on prepared arguments; the differences between lines are the cost of each
layer (docs/PERFORMANCE.md). Timed with time.perf_counter_ns, each call alone.
"""

import statistics

import numpy as np
import torch
from kolo_cases import measure  # this folder's: each call timed alone

import horovod.torch as hvd
import kolo
from kolo import _core


def median_us(call, iters: int = 3000) -> float:
    return statistics.median(measure(call, iters, warmup=200))


def main() -> None:
    hvd.init()
    torch.set_num_threads(1)
    tensor, tensor_out = torch.ones(2), torch.empty(2)
    array, array_out = np.ones(2, np.float32), np.empty(2, np.float32)

    def core(name: str, source, output, pointers: bool) -> None:
        if pointers:
            handle = _core.enqueue_pointers(_core.OP_ALLREDUCE, name, _core.REDUCE_SUM, 0, 1.0,
                                            1.0, 0, 0, 0, _core.DTYPE_FLOAT32, [2],
                                            source.data_ptr(), output.data_ptr())
        else:
            options = _core.EnqueueOptions(op=_core.OP_ALLREDUCE, name=name,
                                           reduce_op=_core.REDUCE_SUM)
            handle = _core.enqueue(options, source, output)
        _core.finish(handle)

    forms = [
        ("hvd.allreduce (torch)", lambda: hvd.allreduce(tensor, name="l.h", op=hvd.Sum)),
        ("hvd.allreduce_ (torch, in place)",
         lambda: hvd.allreduce_(tensor_out, name="l.hi", op=hvd.Sum)),
        ("kolo.allreduce (numpy)", lambda: kolo.allreduce(array, name="l.k", op=kolo.Sum)),
        ("core: enqueue (DLPack, torch) + finish",
         lambda: core("l.rt", tensor, tensor_out, False)),
        ("core: enqueue_pointers (torch) + finish",
         lambda: core("l.rp", tensor, tensor_out, True)),
        ("core: enqueue (DLPack, numpy) + finish",
         lambda: core("l.rn", array, array_out, False)),
        ("torch Tensor.__dlpack__ alone", tensor.__dlpack__),
        ("torch.empty_like alone",
         lambda: torch.empty_like(tensor, memory_format=torch.contiguous_format)),
    ]
    results = [(label, median_us(call)) for label, call in forms]
    if hvd.rank() == 0:
        for label, us in results:
            print(f"{label:<42} {us:8.2f} us", flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
