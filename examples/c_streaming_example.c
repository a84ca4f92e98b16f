/*
 * Streaming from C, as a Go or Rust server would through the C API (asrdec/c_api.h): the CTC and RNN-T samples
 * arrive in chunks of a few frames, every open utterance's next chunk in one decode_chunks call, with one extra
 * utterance that a client abandons (cancel). The final results must equal the whole-utterance decodes bit for bit;
 * the program says so for each decoder and exits 1 otherwise (the tests run it).
 *
 *   c_streaming_example <examples/data> [cpu|cuda|auto] [chunk frames, default 7]
 *
 * Build: cc -std=c11 c_streaming_example.c $(pkg-config --cflags --libs asrdec), or with CMake.
 */
#include <asrdec/c_api.h>
#include <dlpack/dlpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npy_array.h"

static int check(asrdec_status status, const char* what) {
  if (status != ASRDEC_OK) fprintf(stderr, "%s: %s: %s\n", what, asrdec_status_name(status), asrdec_last_error());
  return status == ASRDEC_OK;
}

/* One decoder family behind the calls this program makes: whole batches, chunks, cancel. */
typedef struct {
  const char* name;
  void* decoder;
  asrdec_status (*decode)(void* decoder, const DLTensor* input, const DLTensor* lengths, asrdec_results** out);
  asrdec_status (*decode_chunks)(void* decoder, const asrdec_chunk_row* rows, int64_t num_rows, const DLTensor* input,
                                 const DLTensor* lengths, asrdec_results** out);
  asrdec_status (*cancel)(void* decoder, int64_t utterance, int32_t* was_open);
  int64_t (*open_utterances)(const void* decoder);
} Streamer;

#define ADAPTERS(kind)                                                                                              \
  static asrdec_status kind##_decode(void* d, const DLTensor* input, const DLTensor* lengths, asrdec_results** out) { \
    return asrdec_##kind##_decode((asrdec_##kind##_decoder*)d, input, lengths, NULL, out);                           \
  }                                                                                                                 \
  static asrdec_status kind##_chunks(void* d, const asrdec_chunk_row* rows, int64_t n, const DLTensor* input,       \
                                     const DLTensor* lengths, asrdec_results** out) {                               \
    return asrdec_##kind##_decode_chunks((asrdec_##kind##_decoder*)d, rows, n, input, lengths, NULL, out);           \
  }                                                                                                                 \
  static asrdec_status kind##_cancel(void* d, int64_t utterance, int32_t* was_open) {                               \
    return asrdec_##kind##_cancel((asrdec_##kind##_decoder*)d, utterance, was_open);                                \
  }                                                                                                                 \
  static int64_t kind##_open(const void* d) { return asrdec_##kind##_open_utterances((const asrdec_##kind##_decoder*)d); }

ADAPTERS(ctc_greedy)
ADAPTERS(ctc_beam)
ADAPTERS(transducer_greedy)
ADAPTERS(transducer_beam)

/* What a server keeps of a final result after freeing the call's results: a copy. */
typedef struct {
  int64_t num_tokens;
  int32_t* tokens;
  int32_t* timestamps;
  float score, am_score, lm_score;
} Final;

static Final keep(const asrdec_hypothesis* h) {
  Final f = {h->num_tokens, malloc((size_t)h->num_tokens * sizeof(int32_t) + 1),
             malloc((size_t)h->num_tokens * sizeof(int32_t) + 1), h->score, h->am_score, h->lm_score};
  if (f.tokens != NULL && f.timestamps != NULL && h->num_tokens > 0) { /* an empty result's arrays may be NULL */
    memcpy(f.tokens, h->tokens, (size_t)h->num_tokens * sizeof(int32_t));
    memcpy(f.timestamps, h->timestamps, (size_t)h->num_tokens * sizeof(int32_t));
  }
  return f;
}

static int same(const asrdec_hypothesis* a, const Final* b) {
  return b->tokens != NULL && b->timestamps != NULL && a->num_tokens == b->num_tokens && a->score == b->score &&
         a->am_score == b->am_score && a->lm_score == b->lm_score &&
         (a->num_tokens == 0 || (memcmp(a->tokens, b->tokens, (size_t)a->num_tokens * sizeof(int32_t)) == 0 &&
                                 memcmp(a->timestamps, b->timestamps, (size_t)a->num_tokens * sizeof(int32_t)) == 0));
}

/* Streams `input` [B, T, C] (lengths[b] frames each) by chunks of `chunk` frames and compares every final result
 * with the whole decode. Returns 1 when all are equal. */
static int stream_and_compare(const Streamer* s, const Array* input, int32_t* lengths, int64_t chunk) {
  const int64_t B = input->shape[0], T = input->shape[1], C = input->shape[2];
  const size_t item = input->dtype.bits / 8;
  Array whole_lengths = {lengths, {B, 0, 0}, 1, {kDLInt, 32, 1}};
  DLTensor input_t = dl_tensor((Array*)input), lengths_t = dl_tensor(&whole_lengths);
  asrdec_results* whole = NULL;
  if (!check(s->decode(s->decoder, &input_t, &lengths_t, &whole), s->name)) return 0;

  /* One call per round: the next chunk of every utterance that has frames left, plus (rounds 0 and 1) utterance
   * 9999, a client that goes away after two chunks. Rows are copied into one [rows, chunk, C] buffer. */
  Array frames = {malloc((size_t)((B + 1) * chunk * C) * item + 1), {0, chunk, C}, 3, input->dtype};
  Array row_lengths = {malloc((size_t)(B + 1) * sizeof(int32_t)), {0, 0, 0}, 1, {kDLInt, 32, 1}};
  asrdec_chunk_row* rows = malloc((size_t)(B + 1) * sizeof *rows);
  Final* finals = calloc((size_t)B, sizeof *finals);
  int ok = frames.data != NULL && row_lengths.data != NULL && rows != NULL && finals != NULL;
  int64_t calls = 0, ended = 0;
  for (int64_t start = 0; ok; start += chunk, ++calls) {
    int64_t n = 0;
    for (int64_t b = 0; b < B; ++b) {
      if (start > 0 && start >= lengths[b]) continue; /* ended (an empty utterance still gets one row) */
      const int64_t count = lengths[b] - start < chunk ? lengths[b] - start : chunk;
      rows[n] = (asrdec_chunk_row){b, start == 0, start + count >= lengths[b], 0};
      memcpy((char*)frames.data + (size_t)(n * chunk * C) * item,
             (const char*)input->data + (size_t)((b * T + start) * C) * item, (size_t)(count * C) * item);
      ((int32_t*)row_lengths.data)[n++] = (int32_t)count;
    }
    if (calls < 2) {
      const int64_t count = chunk < T ? chunk : T;
      rows[n] = (asrdec_chunk_row){9999, calls == 0, 0, 0};
      memcpy((char*)frames.data + (size_t)(n * chunk * C) * item, input->data, (size_t)(count * C) * item);
      ((int32_t*)row_lengths.data)[n++] = (int32_t)count;
    }
    if (n == 0) break;
    frames.shape[0] = row_lengths.shape[0] = n;
    DLTensor frames_t = dl_tensor(&frames), row_lengths_t = dl_tensor(&row_lengths);
    asrdec_results* partial = NULL;
    ok = check(s->decode_chunks(s->decoder, rows, n, &frames_t, &row_lengths_t, &partial), s->name);
    for (int64_t i = 0; ok && i < n; ++i) {
      asrdec_hypothesis h; /* a server would send partial results to its client here */
      ok = check(asrdec_results_get(partial, i, 0, &h), "result") && h.is_final == rows[i].last;
      if (ok && rows[i].last) finals[rows[i].utterance] = keep(&h), ++ended;
    }
    asrdec_results_free(partial);
    if (ok && calls == 1) {
      int32_t was_open = 0;
      ok = check(s->cancel(s->decoder, 9999, &was_open), "cancel") && was_open == 1;
    }
  }
  int64_t equal = 0;
  for (int64_t b = 0; ok && b < B; ++b) {
    asrdec_hypothesis want;
    ok = check(asrdec_results_get(whole, b, 0, &want), "whole");
    equal += ok && same(&want, &finals[b]);
  }
  ok = ok && ended == B && equal == B && s->open_utterances(s->decoder) == 0;
  printf("%s: %lld utterances streamed in chunks of %lld frames (%lld calls, one more utterance cancelled): %lld of "
         "%lld equal the whole decode%s\n",
         s->name, (long long)B, (long long)chunk, (long long)calls, (long long)equal, (long long)B,
         ok ? "" : " -- FAILED");
  for (int64_t b = 0; finals != NULL && b < B; ++b) {
    free(finals[b].tokens);
    free(finals[b].timestamps);
  }
  asrdec_results_free(whole);
  free(finals);
  free(rows);
  free(row_lengths.data);
  free(frames.data);
  return ok;
}

/* The lengths as int32 (the sample stores int32 or int64). */
static int32_t* lengths_of(const Array* lengths) {
  int32_t* out = malloc((size_t)lengths->shape[0] * sizeof(int32_t) + 1);
  for (int64_t b = 0; out != NULL && b < lengths->shape[0]; ++b) {
    out[b] = lengths->dtype.bits == 64 ? (int32_t)((const int64_t*)lengths->data)[b] : ((const int32_t*)lengths->data)[b];
  }
  return out;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <examples/data> [cpu|cuda|auto] [chunk frames]\n", argv[0]);
    return 2;
  }
  const char* device = argc > 2 ? argv[2] : "cpu";
  const int64_t chunk = argc > 3 ? atoll(argv[3]) : 7;
  if (chunk < 1) {
    fprintf(stderr, "chunk frames must be at least 1\n");
    return 2;
  }
  /* The inputs are on the host, as the C API takes them on a CPU decoder; on CUDA an engine passes device memory. */
  if (strcmp(device, "cpu") != 0) {
    fprintf(stderr, "this example feeds host memory; run it with cpu\n");
    return 2;
  }
  char path[4096];
  Array ctc, ctc_lengths, enc, enc_lengths;
  snprintf(path, sizeof path, "%s/ctc/logprobs.npy", argv[1]);
  int ok = read_npy(path, &ctc);
  snprintf(path, sizeof path, "%s/ctc/lengths.npy", argv[1]);
  ok = ok && read_npy(path, &ctc_lengths);
  snprintf(path, sizeof path, "%s/rnnt/enc_proj.npy", argv[1]);
  ok = ok && read_npy(path, &enc);
  snprintf(path, sizeof path, "%s/rnnt/lengths.npy", argv[1]);
  ok = ok && read_npy(path, &enc_lengths);
  if (!ok) return 1;
  int32_t* ctc_frames = lengths_of(&ctc_lengths);
  int32_t* enc_frames = lengths_of(&enc_lengths);

  /* Decoders sized for the server: up to 64 rows per call, 4 open utterances more than the sample has. */
  asrdec_ctc_greedy_config ctc_config;
  asrdec_ctc_greedy_config_init(&ctc_config);
  ctc_config.max_batch = 64;
  ctc_config.max_open_utterances = 64;
  ctc_config.threads = 2;
  asrdec_ctc_beam_config beam_config;
  asrdec_ctc_beam_config_init(&beam_config);
  beam_config.beam = 4;
  beam_config.max_open_utterances = 64;
  asrdec_transducer_greedy_config rnnt_config;
  asrdec_transducer_greedy_config_init(&rnnt_config);
  rnnt_config.max_open_utterances = 64;
  asrdec_transducer_beam_config rnnt_beam_config;
  asrdec_transducer_beam_config_init(&rnnt_beam_config);
  rnnt_beam_config.beam = 4;
  rnnt_beam_config.max_open_utterances = 64;

  asrdec_ctc_greedy_decoder* ctc_greedy = NULL;
  asrdec_ctc_beam_decoder* ctc_beam = NULL;
  asrdec_transducer_model* model = NULL;
  asrdec_transducer_greedy_decoder* rnnt_greedy = NULL;
  asrdec_transducer_beam_decoder* rnnt_beam = NULL;
  snprintf(path, sizeof path, "%s/rnnt/model.safetensors", argv[1]);
  ok = ctc_frames != NULL && enc_frames != NULL &&
       check(asrdec_ctc_greedy_create(device, &ctc_config, &ctc_greedy), "ctc greedy") &&
       check(asrdec_ctc_beam_create(device, &beam_config, &ctc_beam), "ctc beam") &&
       check(asrdec_transducer_model_load(path, device, &model), path) &&
       check(asrdec_transducer_greedy_create(model, &rnnt_config, &rnnt_greedy), "rnnt greedy") &&
       check(asrdec_transducer_beam_create(model, &rnnt_beam_config, &rnnt_beam), "rnnt beam");
  asrdec_transducer_model_free(model); /* the decoders keep it */
  const Streamer streamers[] = {
      {"CTC greedy", ctc_greedy, ctc_greedy_decode, ctc_greedy_chunks, ctc_greedy_cancel, ctc_greedy_open},
      {"CTC beam 4", ctc_beam, ctc_beam_decode, ctc_beam_chunks, ctc_beam_cancel, ctc_beam_open},
      {"RNN-T greedy", rnnt_greedy, transducer_greedy_decode, transducer_greedy_chunks, transducer_greedy_cancel,
       transducer_greedy_open},
      {"RNN-T ALSD++ beam 4", rnnt_beam, transducer_beam_decode, transducer_beam_chunks, transducer_beam_cancel,
       transducer_beam_open}};
  for (int i = 0; ok && i < 4; ++i) {
    ok = stream_and_compare(&streamers[i], i < 2 ? &ctc : &enc, i < 2 ? ctc_frames : enc_frames, chunk);
  }
  /* Token confidences (transducer greedy): the first utterance's, from a whole decode. */
  asrdec_results* results = NULL;
  DLTensor enc_t = dl_tensor(&enc), enc_lengths_t = dl_tensor(&enc_lengths);
  const float* confidences = NULL;
  asrdec_hypothesis h;
  if (ok && check(asrdec_transducer_greedy_decode(rnnt_greedy, &enc_t, &enc_lengths_t, NULL, &results), "decode") &&
      check(asrdec_results_get(results, 0, 0, &h), "result") &&
      check(asrdec_results_token_confidences(results, 0, 0, &confidences), "confidences") && confidences != NULL) {
    printf("RNN-T greedy, utterance 0: %lld tokens, confidence of the first %.3f\n", (long long)h.num_tokens,
           h.num_tokens > 0 ? confidences[0] : 0.0f);
  } else {
    ok = 0;
  }
  asrdec_results_free(results);
  asrdec_ctc_greedy_free(ctc_greedy);
  asrdec_ctc_beam_free(ctc_beam);
  asrdec_transducer_greedy_free(rnnt_greedy);
  asrdec_transducer_beam_free(rnnt_beam);
  free(ctc_frames);
  free(enc_frames);
  free(ctc.data);
  free(ctc_lengths.data);
  free(enc.data);
  free(enc_lengths.data);
  return ok ? 0 : 1;
}
