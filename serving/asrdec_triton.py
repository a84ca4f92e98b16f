"""asrdec behind Triton Inference Server's python backend: the models of serving/models load this module.

One utterance per request. Offline models (dynamic batching) decode the requests Triton hands an instance in one
decode() call; streaming models (sequence batching) keep each sequence's state in the decoder under its correlation
id and decode the chunks of one execute() in one decode_chunks() call. A request that fails (a wrong shape, a NaN,
a chunk of a sequence that was never started) gets a Triton error; the other requests of the call are decoded
alone and answered, and the instance keeps serving. Tensor contract and parameters: docs/serving.md.
"""

import json
import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils

import asrdec

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLES = os.path.join(REPO_ROOT, "examples", "data")


def _parameters(args):
    config = json.loads(args["model_config"])
    params = {k: v["string_value"] for k, v in config.get("parameters", {}).items()}
    return config, params


def _device(args, params):
    if params.get("device"):
        return params["device"]
    if args.get("model_instance_kind") == "GPU":
        return f"cuda:{args['model_instance_device_id']}"
    return "cpu"


def _path(params, key, default):
    value = params.get(key) or default
    return value if os.path.isabs(value) else os.path.join(REPO_ROOT, value)


class Decoding:
    """The decoder a model's parameters describe, and how a result becomes the output tensors."""

    def __init__(self, args):
        config, params = _parameters(args)
        self.kind = params["decoder"]
        self.input = "ENC_PROJ" if self.kind.startswith(("rnnt", "tdt")) else "LOGPROBS"
        device = _device(args, params)
        self.on_gpu = device.startswith("cuda")
        self.device = device
        limits = {"max_batch": max(int(config.get("max_batch_size", 0)), 1)}
        vocab_path = _path(params, "vocabulary", os.path.join(SAMPLES, "tokens.txt"))
        self.vocab = asrdec.Vocabulary.load(vocab_path) if vocab_path else None
        fusion = {}
        if params.get("lm"):
            lm = asrdec.NgramLm.load(_path(params, "lm", ""), device=device, vocab_size=len(self.vocab))
            fusion = {"lm": lm, "lm_weight": float(params.get("lm_weight", "0.3"))}
        if self.kind.startswith("ctc_wfst"):
            graph = asrdec.WfstGraph.load(_path(params, "graph", ""))
            self.words = asrdec.SymbolTable.load(_path(params, "words", ""))
            starts = self.vocab.word_start_ids() if self.vocab is not None else []
            self.decoder = asrdec.WfstDecoder(graph, device, beam=float(params.get("beam", "17")),
                                              word_start_columns=starts)
        elif self.kind.startswith("ctc_greedy"):
            self.decoder = asrdec.CtcGreedyDecoder(device, **fusion, **limits)
        elif self.kind.startswith("ctc_beam"):
            self.decoder = asrdec.CtcBeamDecoder(device, beam=int(params.get("beam", "4")), **fusion, **limits)
        else:
            kind = "tdt" if self.kind.startswith("tdt") else "rnnt"
            model = asrdec.TransducerModel.load(_path(params, "model", os.path.join(SAMPLES, kind, "model.safetensors")),
                                                device=device)
            if "_beam" in self.kind:
                self.decoder = asrdec.TransducerBeamDecoder(model, algorithm=params.get("algorithm", "alsd++"),
                                                            beam=int(params.get("beam", "4")), **fusion, **limits)
            else:
                self.decoder = asrdec.TransducerGreedyDecoder(model, algorithm=params.get("algorithm", "label_looping"),
                                                              **fusion, **limits)
        self.frame_shift = float(params.get("frame_shift_seconds", "0.08"))
        # Endpointing rules of the streaming models' ENDPOINT output (seconds; docs/streaming.md#endpointing).
        self.endpoints = asrdec.EndpointConfig(self.frame_shift)
        self.endpoints.rule1.min_trailing_silence = float(params.get("endpoint_silence_no_speech", "2.4"))
        self.endpoints.rule2.min_trailing_silence = float(params.get("endpoint_silence", "1.2"))
        self.endpoints.rule3.min_utterance_length = float(params.get("endpoint_max_length", "20"))

    def place(self, batch):
        """The padded batch where the decoder reads it: a GPU decoder takes device memory."""
        return asrdec.to_device(batch, self.device) if self.on_gpu else batch

    def outputs(self, result):
        """TOKENS, TIMESTAMPS, TEXT, SCORE of a Hypothesis or a WfstResult (WFST: word ids and word start frames)."""
        if isinstance(result, asrdec.WfstResult):
            tokens, stamps = result.words, result.word_start_frames
            text = asrdec.join_words(asrdec.word_timings(result, self.words, self.frame_shift))
        else:
            tokens, stamps = result.tokens, result.timestamps
            text = self.vocab.detokenize(result.tokens) if self.vocab is not None else ""
        return [pb_utils.Tensor("TOKENS", np.asarray([tokens], dtype=np.int32).reshape(1, -1)),
                pb_utils.Tensor("TIMESTAMPS", np.asarray([stamps], dtype=np.int32).reshape(1, -1)),
                pb_utils.Tensor("TEXT", np.array([[text.encode()]], dtype=np.object_)),
                pb_utils.Tensor("SCORE", np.array([[result.score]], dtype=np.float32))]


    def endpoint(self, result, frames):
        """ENDPOINT: the endpointing rule (1, 2, 3) that fires for a streamed result after `frames` frames, or 0."""
        if isinstance(result, asrdec.WfstResult):  # speech ends after the last word's last frame
            speech_end = result.word_end_frames[-1] + 1 if result.words else -1
            rule = asrdec.detect_endpoint(self.endpoints, frames, min(speech_end, frames))
        else:
            rule = asrdec.detect_endpoint(self.endpoints, result, frames)
        return pb_utils.Tensor("ENDPOINT", np.array([[rule]], dtype=np.int32))


def _batch(chunks):
    """Utterances [T_i, D] (one dtype) padded into [B, max T, D], and their lengths."""
    frames = max((c.shape[0] for c in chunks), default=0)
    width = chunks[0].shape[1]
    dtype = chunks[0].dtype if all(c.dtype == chunks[0].dtype for c in chunks) else np.float32
    batch = np.zeros((len(chunks), frames, width), dtype=dtype)
    for b, c in enumerate(chunks):
        batch[b, :c.shape[0]] = c
    return batch, np.array([c.shape[0] for c in chunks], dtype=np.int64)


def _error(message):
    return pb_utils.InferenceResponse(output_tensors=[], error=pb_utils.TritonError(message))


class OfflineModel:
    """Dynamic batching: every request is a whole utterance."""

    def initialize(self, args):
        self.decoding = Decoding(args)

    def _decode(self, utterances):
        batch, lengths = _batch(utterances)
        return self.decoding.decoder.decode(self.decoding.place(batch), lengths)

    def execute(self, requests):
        inputs, responses = [], [None] * len(requests)
        for i, request in enumerate(requests):
            x = pb_utils.get_input_tensor_by_name(request, self.decoding.input).as_numpy()
            if x.ndim != 3 or x.shape[0] != 1:
                responses[i] = _error(f"{self.decoding.input}: expected one utterance [1, T, D], got {list(x.shape)}")
            else:
                inputs.append((i, x[0]))
        if not inputs:
            return responses
        try:
            results = self._decode([x for _, x in inputs])
        except asrdec.Error:
            results = None  # some request is bad: decode each alone, so that only the bad ones fail
        for n, (i, x) in enumerate(inputs):
            try:
                result = results[n] if results is not None else self._decode([x])[0]
                responses[i] = pb_utils.InferenceResponse(output_tensors=self.decoding.outputs(result))
            except asrdec.Error as e:
                responses[i] = _error(str(e))
        return responses


class StreamingModel:
    """Sequence batching: a request is a chunk of the sequence CORRID (START: its first, END: its last); the
    response holds the hypothesis so far. Sequences idle longer than the sequence batcher's idle limit are
    cancelled, so that a vanished client does not keep its state. Each response also carries ENDPOINT, the
    endpointing rule that fires for the result so far (0: none), from the frames of the sequence so far."""

    def initialize(self, args):
        self.decoding = Decoding(args)
        config, _ = _parameters(args)
        idle = config.get("sequence_batching", {}).get("max_sequence_idle_microseconds", 5000000)
        self.idle_seconds = int(idle) / 1e6
        self.last_seen = {}
        self.frames = {}  # frames decoded so far, per open sequence

    def _decode(self, rows, chunks):
        batch, lengths = _batch(chunks)
        return self.decoding.decoder.decode_chunks(rows, self.decoding.place(batch), lengths)

    def execute(self, requests):
        now = time.monotonic()
        rows, chunks, index, responses = [], [], [], [None] * len(requests)
        for i, request in enumerate(requests):
            control = {name: int(pb_utils.get_input_tensor_by_name(request, name).as_numpy().reshape(-1)[0])
                       for name in ("START", "END", "CORRID")}
            x = pb_utils.get_input_tensor_by_name(request, self.decoding.input).as_numpy()
            if x.ndim != 3 or x.shape[0] != 1:
                responses[i] = _error(f"{self.decoding.input}: expected one chunk [1, T, D], got {list(x.shape)}")
                continue
            rows.append(asrdec.ChunkRow(control["CORRID"], control["START"] != 0, control["END"] != 0))
            chunks.append(x[0])
            index.append(i)
        if rows:
            try:
                results = self._decode(rows, chunks)
            except asrdec.Error:
                results = None  # a bad chunk changed nothing: decode each alone, so that only the bad ones fail
            for n, (row, chunk, i) in enumerate(zip(rows, chunks, index)):
                try:
                    result = results[n] if results is not None else self._decode([row], [chunk])[0]
                    frames = (0 if row.first else self.frames.get(row.utterance, 0)) + chunk.shape[0]
                    outputs = self.decoding.outputs(result) + [self.decoding.endpoint(result, frames)]
                    responses[i] = pb_utils.InferenceResponse(output_tensors=outputs)
                    if row.last:
                        self.last_seen.pop(row.utterance, None)
                        self.frames.pop(row.utterance, None)
                    else:
                        self.last_seen[row.utterance] = now
                        self.frames[row.utterance] = frames
                except asrdec.Error as e:
                    responses[i] = _error(str(e))
        for utterance, seen in list(self.last_seen.items()):
            if now - seen > self.idle_seconds:
                self.decoding.decoder.cancel(utterance)
                del self.last_seen[utterance]
                self.frames.pop(utterance, None)
        return responses

    def finalize(self):
        for utterance in list(self.last_seen):
            self.decoding.decoder.cancel(utterance)
