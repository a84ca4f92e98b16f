"""The Python surface itself: zero-copy inputs, strides and dtypes, the GIL, errors, lifetimes, streaming,
keywords."""

import gc
import sys
import threading
import time

import numpy as np
import pytest

import asrdec
from asrdec import _asrdec
from conftest import DATA, transducer_input

SEED = 20261126


def test_contiguous_float32_is_read_in_place(ctc_input):
    x = np.ascontiguousarray(ctc_input[0], dtype=np.float32)
    address, dtype, device, shape = _asrdec._tensor_info(x)
    assert (address, dtype, device, shape) == (x.ctypes.data, "float32", "cpu", "[40, 87, 257]")
    # A strided view is read in place too, with its strides.
    view = x[:, ::2, :]
    assert _asrdec._tensor_info(view)[0] == view.__array_interface__["data"][0]


def test_strided_and_half_inputs_give_the_contiguous_results(ctc_input):
    x16, n = ctc_input
    x32 = x16.astype(np.float32)  # the sample is float16: these are the same values
    decoder = asrdec.CtcBeamDecoder(beam=3)
    want = decoder.decode(x32, n)
    # Frames padded with garbage, then sliced off: a view with a larger frame stride.
    padded = np.full((x32.shape[0], x32.shape[1], 2 * x32.shape[2]), np.nan, dtype=np.float32)
    padded[:, :, ::2] = x32
    strided = padded[:, :, ::2]
    assert not strided.flags["C_CONTIGUOUS"]
    for got in (decoder.decode(strided, n), decoder.decode(x16, n), decoder.decode(x32, n.astype(np.int32))):
        assert [(h.tokens, h.timestamps, h.score) for h in got] == [(h.tokens, h.timestamps, h.score) for h in want]
    # Transducer: a transposed layout [T, B, J] seen as [B, T, J].
    enc, lengths = transducer_input("rnnt")
    model = asrdec.TransducerModel.load(str(DATA / "rnnt" / "model.safetensors"))
    greedy = asrdec.TransducerGreedyDecoder(model)
    time_major = np.ascontiguousarray(enc.transpose(1, 0, 2)).transpose(1, 0, 2)
    assert [h.tokens for h in greedy.decode(time_major, lengths)] == [h.tokens for h in greedy.decode(enc, lengths)]


def test_greedy_loop_counts_describe_the_last_call():
    enc, lengths = transducer_input("rnnt")
    model = asrdec.TransducerModel.load(str(DATA / "rnnt" / "model.safetensors"))
    decoder = asrdec.TransducerGreedyDecoder(model, threads=1)
    assert decoder.loop_counts() == {"outer": 0, "inner": 0, "choices": 0, "joint_passes": 0}
    hyps = decoder.decode(enc, lengths)
    batch = decoder.loop_counts()
    # One row alone: every pass evaluates it, once a label and once a frame, less the frames left by the
    # max_symbols rule (10 labels on one frame; read from the timestamps).
    rows = []
    for b, h in enumerate(hyps):
        decoder.decode(enc[b : b + 1], lengths[b : b + 1])
        rows.append(decoder.loop_counts())
        capped = sum(1 for t in set(h.timestamps) if h.timestamps.count(t) == 10)
        assert rows[-1]["choices"] == rows[-1]["joint_passes"] == int(lengths[b]) + len(h.tokens) - capped
    assert batch["choices"] == sum(r["choices"] for r in rows)
    # Label looping pauses a batch's last stragglers (docs/transducer-greedy.md): at least the longest row's outer
    # passes, at most the rows' inner passes.
    assert batch["outer"] >= max(r["outer"] for r in rows)
    assert batch["inner"] <= sum(r["inner"] for r in rows)
    assert batch["joint_passes"] == batch["outer"] + batch["inner"]


def test_beam_loop_counts_describe_the_last_call():
    enc, lengths = transducer_input("rnnt")
    model = asrdec.TransducerModel.load(str(DATA / "rnnt" / "model.safetensors"))
    alsd = asrdec.TransducerBeamDecoder(model, algorithm="alsd++", beam=1, threads=1)
    assert alsd.loop_counts() == {"outer": 0, "inner": 0, "joint_passes": 0}
    # Beam 1 on RNN-T: one path an utterance, a step for each of its frames and tokens; a batch runs its longest.
    steps = []
    for b in range(4):
        (h,) = alsd.decode(enc[b : b + 1], lengths[b : b + 1])
        counts = alsd.loop_counts()
        assert counts == {"outer": int(lengths[b]) + len(h.tokens), "inner": 0, "joint_passes": counts["outer"]}
        steps.append(counts["outer"])
    alsd.decode(enc[:4], lengths[:4])
    assert alsd.loop_counts()["outer"] == max(steps)
    # AES++ searches every frame, with one to aes_num_steps expansion steps each, and evaluates the joint on entering
    # a frame and after each step.
    aes = asrdec.TransducerBeamDecoder(model, algorithm="aes++", beam=4, aes_num_steps=2, threads=1)
    aes.decode(enc[:4], lengths[:4])
    counts = aes.loop_counts()
    assert counts["outer"] == int(lengths[:4].max())
    assert counts["outer"] <= counts["inner"] <= 2 * counts["outer"]
    assert counts["joint_passes"] == counts["outer"] + counts["inner"]


def test_lists_are_accepted_as_lengths(ctc_input):
    x, n = ctc_input
    decoder = asrdec.CtcGreedyDecoder()
    assert [h.tokens for h in decoder.decode(x, [int(v) for v in n])] == [h.tokens for h in decoder.decode(x, n)]


def test_decode_takes_one_utterance_a_list_of_them_and_float64(ctc_input):
    x16, n = ctc_input
    x = x16.astype(np.float32)
    decoder = asrdec.CtcBeamDecoder(beam=3)

    def key(hyps):
        return [(h.tokens, h.timestamps, h.score) for h in hyps]

    want = key(decoder.decode(x, n))
    # One utterance [T, V]: a batch of one, read in place, its length implied.
    for b in (0, 7):
        assert key(decoder.decode(x[b, : n[b]])) == want[b : b + 1]
        assert key(decoder.decode(x[b], [int(n[b])])) == want[b : b + 1]
    # Utterances of their own lengths in a list or tuple: padded into one batch.
    utterances = [x[b, : n[b]] for b in range(len(n))]
    assert key(decoder.decode(utterances)) == want
    assert key(decoder.decode(tuple(utterances), n)) == want
    assert key(decoder.decode([u.astype(np.float16) for u in utterances])) == key(decoder.decode(x16, n))
    # float64 frames are converted on the host (float32 values widened: the same results).
    assert key(decoder.decode(x.astype(np.float64), n)) == want
    assert key(decoder.decode([u.astype(np.float64) for u in utterances])) == want
    # A padded batch without lengths: every row whole.
    shortest = int(n.min())
    whole = np.ascontiguousarray(x[:, :shortest])
    assert key(decoder.decode(whole)) == key(decoder.decode(whole, np.full(len(n), shortest)))
    assert [h.tokens for h in asrdec.CtcGreedyDecoder().decode(utterances)] == [
        h.tokens for h in asrdec.CtcGreedyDecoder().decode(x, n)
    ]
    # What cannot be read says which argument and why.
    with pytest.raises(asrdec.InvalidArgument, match=r"logprobs\[1\] has 3 values a frame, logprobs\[0\] has 257"):
        decoder.decode([x[0, :5], x[1, :5, :3]])
    with pytest.raises(asrdec.InvalidArgument, match=r"logprobs\[0\]: expected one utterance's frames \[T, \*\]"):
        decoder.decode([x[:2]])
    with pytest.raises(asrdec.InvalidArgument, match="an empty list"):
        decoder.decode([])


def test_decoding_releases_the_gil(ctc_input):
    # While one thread is inside decode(), this thread keeps running Python; with the GIL held through the call it
    # could run only between calls. Count this thread's loop iterations that fall inside a decode call.
    x, n = ctc_input
    batch = np.ascontiguousarray(np.tile(x.astype(np.float32), (8, 1, 1)))
    lengths = np.tile(n, 8)
    decoder = asrdec.CtcBeamDecoder(beam=8, threads=1)
    calls, done = [], threading.Event()

    def work():
        for _ in range(3):
            start = time.perf_counter()
            decoder.decode(batch, lengths)
            calls.append((start, time.perf_counter()))
        done.set()

    stamps = []
    switch = sys.getswitchinterval()
    sys.setswitchinterval(0.0001)  # so that the time the threads share before and after a call is short
    try:
        worker = threading.Thread(target=work)
        worker.start()
        while not done.is_set():
            stamps.append(time.perf_counter())
        worker.join()
    finally:
        sys.setswitchinterval(switch)
    margin = 0.005  # thread switches around a call's start and end
    inside = sum(1 for t in stamps for start, end in calls if start + margin < t < end - margin)
    longest = max(end - start for start, end in calls)
    assert longest > 4 * margin, f"decode calls too short to tell ({longest * 1000:.1f} ms)"
    assert inside > 1000, f"only {inside} loop iterations ran inside {len(calls)} decode calls"


def test_errors_are_typed_with_the_cpp_messages(ctc_input, tmp_path):
    x, n = ctc_input
    bad = x.astype(np.float32)
    bad[1, 2, 3] = np.nan
    decoder = asrdec.CtcGreedyDecoder()
    with pytest.raises(asrdec.InvalidArgument, match=r"logprobs\[1, 2, 3\] is NaN"):
        decoder.decode(bad, n)
    with pytest.raises(ValueError):  # an InvalidArgument is a ValueError too
        decoder.decode(x, n + 1000)
    with pytest.raises(asrdec.InvalidArgument, match="lengths"):
        decoder.decode(x, n[:3])
    with pytest.raises(asrdec.InvalidArgument, match="logprobs"):
        decoder.decode(x[0, 0], n)
    with pytest.raises(asrdec.InvalidArgument, match="logprobs"):
        decoder.decode("not a tensor", n)
    with pytest.raises(asrdec.InvalidArgument, match="cuda:x|device"):
        asrdec.CtcGreedyDecoder("cuda:x")
    with pytest.raises(asrdec.FileError, match="no_such.safetensors") as error:
        asrdec.TransducerModel.load(str(tmp_path / "no_such.safetensors"))
    assert isinstance(error.value, OSError) and isinstance(error.value, asrdec.Error)
    broken = tmp_path / "broken.arpa"
    broken.write_text("\\data\\\nngram 1=2\n\n\\1-grams:\n-1.0 a\n")
    with pytest.raises(asrdec.Error, match="broken.arpa"):
        asrdec.NgramLm.load(str(broken), vocab_size=10)
    tdt = asrdec.TransducerModel.load(str(DATA / "tdt" / "model.safetensors"))
    with pytest.raises(asrdec.Unsupported, match="RNN-T"):
        asrdec.TransducerBeamDecoder(tdt, algorithm="aes++")
    with pytest.raises(TypeError, match="unexpected keyword argument 'beam_size'"):
        asrdec.CtcBeamDecoder(beam_size=4)
    with pytest.raises(TypeError, match="'beam'"):
        asrdec.CtcBeamDecoder(beam="four")
    with pytest.raises(asrdec.InvalidArgument, match="beam"):
        asrdec.CtcBeamDecoder(beam=0)
    with pytest.raises(asrdec.InvalidArgument, match="unknown"):
        asrdec.TransducerGreedyDecoder(tdt, algorithm="no-such")


def test_results_outlive_inputs_and_decoders(ctc_input):
    x, n = ctc_input
    copy, lengths = x.copy(), n.copy()
    lm = asrdec.NgramLm.load(str(DATA / "lm" / "tokens_4gram.arpa.gz"), vocab_size=x.shape[2] - 1)
    decoder = asrdec.CtcBeamDecoder(beam=2, lm=lm, lm_weight=0.3)
    del lm  # the decoder keeps the LM
    gc.collect()
    hyps = decoder.decode(copy, lengths)
    want = [(h.tokens, h.score) for h in hyps]
    del copy, lengths, decoder
    gc.collect()
    assert [(h.tokens, h.score) for h in hyps] == want and all(h.lm_score != 0 for h in hyps)


def test_streaming_equals_whole_utterances(ctc_input):
    rng = np.random.default_rng(SEED)
    print(f"seed {SEED}")
    x, n = ctc_input
    model = asrdec.TransducerModel.load(str(DATA / "rnnt" / "model.safetensors"))
    enc, enc_lengths = transducer_input("rnnt")
    for decoder, data, lengths in ((asrdec.CtcGreedyDecoder(), x, n), (asrdec.CtcBeamDecoder(beam=3), x, n),
                                   (asrdec.TransducerGreedyDecoder(model), enc, enc_lengths),
                                   (asrdec.TransducerBeamDecoder(model, beam=3), enc, enc_lengths)):
        whole = decoder.decode(data, lengths)
        rows = [0, 5, 17]
        offsets = {u: 0 for u in rows}
        final = {}
        while offsets:
            chunk = int(rng.integers(1, 9))
            call = sorted(offsets)
            piece = np.zeros((len(call), chunk, data.shape[2]), dtype=data.dtype)
            sizes, descriptors = [], []
            for r, u in enumerate(call):
                size = min(chunk, int(lengths[u]) - offsets[u])
                piece[r, :size] = data[u, offsets[u]:offsets[u] + size]
                descriptors.append(asrdec.ChunkRow(u, bool(offsets[u] == 0), bool(offsets[u] + size == lengths[u])))
                sizes.append(size)
            got = decoder.decode_chunks(descriptors, piece, np.array(sizes, dtype=np.int64))
            for r, u in enumerate(call):
                offsets[u] += sizes[r]
                assert got[r].is_final == descriptors[r].last
                if descriptors[r].last:
                    final[u] = got[r]
                    del offsets[u]
        assert decoder.open_utterances == 0
        for u in rows:
            assert (final[u].tokens, final[u].timestamps, final[u].score) == (
                whole[u].tokens, whole[u].timestamps, whole[u].score), (repr(decoder), u)
            # Every token decoder gives token scores and confidences, beam search along the best alignment.
            assert len(whole[u].token_scores) == len(whole[u].tokens), (repr(decoder), u)
            assert final[u].token_scores == whole[u].token_scores, (repr(decoder), u)
            assert np.allclose(final[u].token_confidences, np.exp(whole[u].token_scores), rtol=1e-6), (repr(decoder), u)
    # Tuples are rows too; cancel forgets an utterance.
    decoder = asrdec.CtcGreedyDecoder()
    decoder.decode_chunks([(7, True, False)], x[:1, :4], [4])
    assert decoder.open_utterances == 1 and decoder.cancel(7) and not decoder.cancel(7)


def test_devices_and_build():
    assert asrdec.Device("cpu") == asrdec.Device.cpu() and asrdec.Device().is_cpu
    assert asrdec.__version__ in asrdec.build_info()
    if asrdec.cuda_available():
        assert asrdec.Device("cuda").is_cuda and str(asrdec.Device("cuda:0")) == "cuda:0"
    else:
        # Without a usable GPU a CUDA device is refused with the reason.
        with pytest.raises(asrdec.Unsupported, match="no CUDA device"):
            asrdec.CtcGreedyDecoder("cuda")


def test_async_results_are_dlpack_tensors_of_the_decoders_buffers(ctc_input):
    x, n = ctc_input
    model = asrdec.TransducerModel.load(str(DATA / "tdt" / "model.safetensors"))
    enc, enc_lengths = transducer_input("tdt")
    for decoder, data, lengths in ((asrdec.CtcGreedyDecoder(), x, n),
                                   (asrdec.TransducerGreedyDecoder(model), enc, enc_lengths)):
        want = decoder.decode(data, lengths)
        out = decoder.decode_async(data, lengths)
        decoder.synchronize_and_check()
        del decoder  # the arrays keep the decoder, whose buffers they are, alive
        gc.collect()
        tokens, stamps = np.from_dlpack(out["tokens"]), np.from_dlpack(out["timestamps"])
        count, am = np.from_dlpack(out["lengths"]), np.from_dlpack(out["am_scores"])
        assert tokens.shape[0] == len(want) and out["tokens"].__dlpack_device__()[0] == 1  # kDLCPU
        for b, h in enumerate(want):
            assert tokens[b, :count[b]].tolist() == h.tokens and stamps[b, :count[b]].tolist() == h.timestamps
            assert am[b] == np.float32(h.am_score)
        if "durations" in out:
            durations = np.from_dlpack(out["durations"])
            assert all(durations[b, :count[b]].tolist() == h.durations for b, h in enumerate(want))
    bad = x.astype(np.float32)
    bad[0, 1, 2] = np.inf
    decoder = asrdec.CtcGreedyDecoder()
    with pytest.raises(asrdec.InvalidArgument, match=r"logprobs\[0, 1, 2\]"):
        decoder.decode_async(bad, n)
        decoder.synchronize_and_check()


def test_to_device_copies_host_arrays(ctc_input):
    x, n = ctc_input
    copy = asrdec.to_device(np.ascontiguousarray(x), "cpu")  # on a GPU machine: "cuda" (tests/test_cuda.py)
    assert np.array_equal(np.from_dlpack(copy), x) and _asrdec._tensor_info(copy)[0] != x.ctypes.data
    assert [h.tokens for h in asrdec.CtcGreedyDecoder().decode(copy, n)] == [
        h.tokens for h in asrdec.CtcGreedyDecoder().decode(x, n)]
    with pytest.raises(asrdec.InvalidArgument, match="contiguous"):
        asrdec.to_device(x[:, ::2], "cpu")


def test_cpu_threads_are_shared_and_sized_once(ctc_input):
    x, n = ctc_input
    asrdec.CtcGreedyDecoder("cpu", threads=0).decode(x, n)  # the pool runs
    size = asrdec.cpu_threads()
    assert size >= 1
    asrdec.set_cpu_threads(size)  # the size it has: accepted
    with pytest.raises(asrdec.InvalidArgument, match="already runs with"):
        asrdec.set_cpu_threads(size + 1)


def test_phrase_lists_per_request_in_slots(ctc_input):
    """Each utterance brings its own phrases: a slotted tree refilled between calls, one decoder for every call, gives
    what a tree built from that utterance's list gives alone."""
    x, n = ctc_input
    vocab = x.shape[2] - 1
    tree = asrdec.BoostingTree.with_slots(vocab, slots=4, states_per_slot=64)
    decoder = asrdec.CtcGreedyDecoder("cpu", boost=tree, boost_weight=3.0, max_batch=4)
    plain = asrdec.CtcGreedyDecoder("cpu").decode(x, n)
    boosted = 0
    for first in (0, 4, 8):
        lists = []
        for b in range(4):
            tokens = plain[first + b].tokens
            # a phrase close to what was decoded, one token changed: boosting must pull the result towards it
            phrase = list(tokens[2:5]) if len(tokens) > 5 else [1, 2]
            phrase[-1] = (phrase[-1] + 1) % vocab
            lists.append([phrase])
            tree.set_list(b, lists[-1])
        got = decoder.decode(x[first:first + 4], n[first:first + 4])
        for b in range(4):
            alone = asrdec.CtcGreedyDecoder("cpu", boost=asrdec.BoostingTree.build(lists[b], vocab), boost_weight=3.0)
            want = alone.decode(x[first + b:first + b + 1], n[first + b:first + b + 1])[0]
            assert (got[b].tokens, got[b].score, got[b].boost_score) == (want.tokens, want.score, want.boost_score)
            boosted += got[b].boost_score != 0
    assert boosted > 0
    with pytest.raises(asrdec.InvalidArgument, match="slot 4 is outside"):
        tree.set_list(4, [[1]])
    with pytest.raises(asrdec.OutOfMemory, match="states_per_slot = 64"):
        tree.set_list(0, [[t % vocab, (t + 1) % vocab] for t in range(100)])


def test_confidence_measures_are_keywords():
    model = asrdec.TransducerModel.load(str(DATA / "rnnt" / "model.safetensors"))
    enc, lengths = transducer_input("rnnt")
    default = asrdec.TransducerGreedyDecoder(model).decode(enc[:3], lengths[:3])
    nemo = asrdec.TransducerGreedyDecoder(model, confidence_measure="tsallis", entropy_norm="exp",
                                          confidence_alpha=0.33).decode(enc[:3], lengths[:3])
    assert [h.tokens for h in nemo] == [h.tokens for h in default]  # the measure changes confidences only
    values = [c for h in nemo for c in h.token_confidences]
    assert values and all(-1e-5 <= c <= 1.0 + 1e-5 for c in values)
    assert values != [c for h in default for c in h.token_confidences]
    with pytest.raises(asrdec.InvalidArgument, match="unknown confidence measure 'entropy'"):
        asrdec.TransducerGreedyDecoder(model, confidence_measure="entropy")


def test_wfst_lane_sizes_are_keywords(wfst_graph):
    graph = asrdec.WfstGraph.load(str(wfst_graph[0]))
    asrdec.WfstDecoder(graph, device_frame_tokens=64, device_history_tokens=256, device_fast_tokens=32)
    asrdec.WfstDecoder(graph, device_fast_tokens=0)
    with pytest.raises(asrdec.InvalidArgument, match=r"device_fast_tokens must be 0 or a power of two in \[2, 512\], got 48"):
        asrdec.WfstDecoder(graph, device_fast_tokens=48)
