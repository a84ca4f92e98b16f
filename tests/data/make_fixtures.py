"""Writes the small reference files the reader tests load, with NumPy and the safetensors package themselves,
so that the readers are checked against the formats' own writers. Run from this folder; the output is
committed, so tests do not need Python."""
import numpy as np
from safetensors.numpy import save_file

np.save("npy/f32_2x3.npy", np.array([[1.5, -2.25, 3.0], [0.0, -0.0, 1e-3]], dtype=np.float32))
np.save("npy/f16_4.npy", np.array([1.0, -0.5, 65504.0, 6.1e-5], dtype=np.float16))
np.save("npy/i32_3.npy", np.array([7, -1, 2147483647], dtype=np.int32))
np.save("npy/i64_2x2.npy", np.array([[1, -2], [9007199254740993, 0]], dtype=np.int64))
np.save("npy/f32_scalar.npy", np.array(4.5, dtype=np.float32))
np.save("npy/f32_empty_0x5.npy", np.zeros((0, 5), dtype=np.float32))
np.save("npy/f64_2.npy", np.array([1.0, 2.0], dtype=np.float64))
np.save("npy/f32_big_endian.npy", np.array([1.0, 2.0], dtype=">f4"))
np.save("npy/f32_fortran_2x3.npy", np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)))
np.save("npy/u8_3.npy", np.array([1, 2, 3], dtype=np.uint8))
# A version 2.0 file: NumPy writes one when asked explicitly.
with open("npy/f32_v2.npy", "wb") as f:
    np.lib.format.write_array(f, np.array([[1.0, 2.0]], dtype=np.float32), version=(2, 0))

tensors = {
    "weights.f32": np.array([[0.5, -1.0, 2.0], [3.0, 4.5, -6.0]], dtype=np.float32),
    "weights.f16": np.array([1.0, -2.0, 0.25], dtype=np.float16),
    "ids.i32": np.array([3, 1, 4, 1, 5], dtype=np.int32),
    "ids.i64": np.array([[2, 7]], dtype=np.int64),
    "other.f64": np.array([1.0], dtype=np.float64),
}
save_file(tensors, "safetensors/small.safetensors", metadata={"model_type": "test", "vocab_size": "5"})
