"""asrdec: exact, fast decoding of speech-recognition model outputs (CTC, RNN-T/TDT, WFST) on CPUs and NVIDIA GPUs.

The names and fields are the C++ library's (docs/python.md): decoders take their config fields as keyword
arguments, read any tensor with ``__dlpack__`` (NumPy, PyTorch, CuPy, JAX) without a copy, and release the GIL
while they decode.
"""

from ._asrdec import (  # noqa: F401
    AedDecoder,
    AedDecoderStep,
    BoostingTree,
    ChunkRow,
    CtcBeamDecoder,
    CtcGraphSummary,
    CtcGreedyDecoder,
    CudaError,
    Device,
    EndpointConfig,
    EndpointRule,
    Error,
    FileError,
    Hypothesis,
    InvalidArgument,
    NgramLm,
    OutOfMemory,
    ParseError,
    SymbolTable,
    TransformerDecoderStep,
    TransducerBeamDecoder,
    TransducerGreedyDecoder,
    TransducerModel,
    Unsupported,
    Vocabulary,
    WfstDecoder,
    WfstGraph,
    WfstResult,
    WordTiming,
    build_ctc_graph,
    build_info,
    cpu_threads,
    cuda_available,
    cuda_device_count,
    detect_endpoint,
    join_words,
    read_word_boosts,
    set_cpu_threads,
    to_device,
    version,
    word_timings,
)

__version__ = version()
