"""CUDA through Python: PyTorch CUDA tensors read in place (the DLPack stream protocol with the caller's stream),
the tokens of the CPU decoders, decode_async tensors on the GPU. Skipped without a usable GPU or without torch."""

import numpy as np
import pytest

import asrdec
from conftest import DATA, transducer_input

if not asrdec.cuda_available():
    pytest.skip("no usable CUDA device for asrdec", allow_module_level=True)
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("torch sees no CUDA device", allow_module_level=True)


def key(hyps):  # CPU and CUDA agree on these; scores to float rounding (docs/cuda-contract.md)
    return [(h.tokens, h.timestamps, h.durations) for h in hyps]


def test_torch_cuda_tensors_on_a_side_stream(ctc_input):
    x, n = ctc_input
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        logprobs = torch.from_numpy(x.astype(np.float32)).cuda()
        lengths = torch.from_numpy(n).cuda()
    decoder = asrdec.CtcBeamDecoder("cuda", beam=4)
    got = decoder.decode(logprobs, lengths, stream=stream)
    want = asrdec.CtcBeamDecoder("cpu", beam=4).decode(x, n)
    assert key(got) == key(want)
    assert asrdec._asrdec._tensor_info(logprobs)[0] == logprobs.data_ptr()


def test_transducer_on_cuda_equals_the_cpu_tokens():
    enc, lengths = transducer_input("rnnt")
    model = asrdec.TransducerModel.load(str(DATA / "rnnt" / "model.safetensors"), device="cuda")
    cpu = asrdec.TransducerModel.load(str(DATA / "rnnt" / "model.safetensors"))
    got = asrdec.TransducerGreedyDecoder(model).decode(torch.from_numpy(enc).cuda(), torch.from_numpy(lengths).cuda())
    want = asrdec.TransducerGreedyDecoder(cpu).decode(enc, lengths)
    assert [h.tokens for h in got] == [h.tokens for h in want]


def test_decode_async_tensors_stay_on_the_gpu(ctc_input):
    x, n = ctc_input
    decoder = asrdec.CtcGreedyDecoder("cuda")
    want = asrdec.CtcGreedyDecoder("cpu").decode(x, n)
    out = decoder.decode_async(torch.from_numpy(x).cuda(), torch.from_numpy(n).cuda())
    decoder.synchronize_and_check()
    tokens, count = torch.from_dlpack(out["tokens"]), torch.from_dlpack(out["lengths"])
    assert tokens.is_cuda
    assert [tokens[b, :count[b]].tolist() for b in range(len(want))] == [h.tokens for h in want]


def test_to_device_feeds_numpy_to_a_cuda_decoder(ctc_input):
    x, n = ctc_input
    got = asrdec.CtcGreedyDecoder("cuda").decode(asrdec.to_device(np.ascontiguousarray(x), "cuda"), n)
    assert key(got) == key(asrdec.CtcGreedyDecoder("cpu").decode(x, n))
