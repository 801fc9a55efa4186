"""Per-example gradients in Keras 3: none.

Keras has no backend-neutral gradient API, so no backend-neutral per-example gradients either:
`model.fit`/`train_on_batch` only ever see the batch-mean loss. The way to do it is to leave Keras
for the backend: call `model.stateless_call(trainable_vars, non_trainable_vars, x)` inside the
backend's own transform — `jax.vmap(jax.grad(...))` on the JAX backend, `torch.func.vmap(grad(...))`
on the torch backend, a `tf.GradientTape` jacobian on TensorFlow — which is the code of the JAX,
PyTorch and TensorFlow variants of this workload.
"""

FRAMEWORK = "keras"
MODES = ()
NOTE = "no backend-neutral API: use model.stateless_call inside the backend's vmap/grad"
