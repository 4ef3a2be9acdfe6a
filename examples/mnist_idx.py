"""Reading MNIST-format IDX files (optionally gzipped), shared by the MNIST examples: by default
the Fashion-MNIST files of Debian's dataset-fashion-mnist package (scripts/setup.sh installs it),
so no example downloads anything."""

import gzip
import os

import numpy as np

DEFAULT_DATA_DIR = "/usr/share/datasets/fashion-mnist"


def read_idx(path: str) -> np.ndarray:
    """An IDX file (the MNIST format), gzipped or not, as a NumPy array."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def find(data_dir: str, stem: str) -> str:
    for name in (stem, stem + ".gz", stem.replace("-idx", ".idx")):
        path = os.path.join(data_dir, name)
        if os.path.exists(path):
            return path
    raise FileNotFoundError(f"no {stem}[.gz] in {data_dir}: pass --data-dir with MNIST IDX files "
                            "(or install Debian's dataset-fashion-mnist: scripts/setup.sh)")


def load_split(data_dir: str, train: bool) -> tuple:
    """(images as uint8 [n, 28, 28], labels as uint8 [n]) of the train or test split."""
    prefix = "train" if train else "t10k"
    return (read_idx(find(data_dir, f"{prefix}-images-idx3-ubyte")),
            read_idx(find(data_dir, f"{prefix}-labels-idx1-ubyte")))
