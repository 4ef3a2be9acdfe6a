"""``torchvision.transforms`` Compose, ToTensor and Normalize for uint8 image tensors."""

import torch


class Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, image):
        for transform in self.transforms:
            image = transform(image)
        return image


class ToTensor:
    def __call__(self, image):
        # H x W uint8 -> 1 x H x W float in [0, 1], as torchvision does for a grey image.
        return image.to(torch.float32).div(255).unsqueeze(0)


class Normalize:
    def __init__(self, mean, std):
        self.mean = torch.tensor(mean).view(-1, 1, 1)
        self.std = torch.tensor(std).view(-1, 1, 1)

    def __call__(self, tensor):
        return (tensor - self.mean) / self.std
