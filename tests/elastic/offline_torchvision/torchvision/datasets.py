"""``torchvision.datasets.MNIST`` reading the IDX files already in ``root/MNIST/raw``."""

import gzip
import os

import numpy as np
import torch


def _read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


class MNIST(torch.utils.data.Dataset):
    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        self.root, self.train = root, train
        self.transform, self.target_transform = transform, target_transform
        prefix = "train" if train else "t10k"
        raw = os.path.join(root, "MNIST", "raw")
        self.data = torch.from_numpy(_read_idx(self._find(raw, f"{prefix}-images-idx3-ubyte")))
        self.targets = torch.from_numpy(
            _read_idx(self._find(raw, f"{prefix}-labels-idx1-ubyte")).astype(np.int64))

    @staticmethod
    def _find(folder, stem):
        for name in (stem, stem + ".gz"):
            if os.path.exists(os.path.join(folder, name)):
                return os.path.join(folder, name)
        raise RuntimeError(f"Dataset not found in {folder} (offline stand-in: no download)")

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        image, target = self.data[index], int(self.targets[index])
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target
