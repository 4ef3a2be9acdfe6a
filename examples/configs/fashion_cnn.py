# A CNN on Fashion-MNIST (Debian's dataset-fashion-mnist): 82.6% test accuracy after 2 epochs on
# the first 20,000 training images, 2 ranks (bench/train_vs_ddp/run.py --config ...).
model = dict(type="cnn", width=32)
data = dict(type="fashion_mnist", batch_size=64)
optimizer = dict(type="SGD", lr=0.02, momentum=0.9, weight_decay=5e-4)
schedule = dict(epochs=3, warmup_epochs=1, policy="cosine")
