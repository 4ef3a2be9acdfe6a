# The training benchmark's MLP (784-1024-1024-10) on Fashion-MNIST.
model = dict(type="mlp")
data = dict(type="fashion_mnist", batch_size=64)
optimizer = dict(type="SGD", lr=0.02, momentum=0.9)
schedule = dict(epochs=3, warmup_epochs=1, policy="cosine")
