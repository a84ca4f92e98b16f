/*
 * asrdec from C: greedy and beam CTC decoding of log-probabilities an engine holds in memory, through the C API
 * (asrdec/c_api.h). Here the "engine output" is read from the sample's .npy files.
 *
 *   c_api_example logprobs.npy lengths.npy tokens.txt [cpu|cuda|auto]
 *
 * Build: cc -std=c11 c_api_example.c $(pkg-config --cflags --libs asrdec), or with CMake (examples/CMakeLists.txt).
 */
#include <asrdec/c_api.h>
#include <dlpack/dlpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npy_array.h"

/* Token pieces, one per line ("▁" starts a word), as in examples/data/tokens.txt. */
static char** read_tokens(const char* path, int64_t* count) {
  FILE* file = fopen(path, "r");
  char line[256];
  char** tokens = NULL;
  *count = 0;
  while (file != NULL && fgets(line, sizeof line, file) != NULL) {
    line[strcspn(line, "\r\n")] = '\0';
    char** grown = realloc(tokens, (size_t)(*count + 1) * sizeof *tokens);
    if (grown == NULL) break;
    tokens = grown;
    size_t length = strlen(line) + 1;
    tokens[*count] = malloc(length); /* strdup is POSIX, not C11 */
    if (tokens[*count] == NULL) break;
    memcpy(tokens[(*count)++], line, length);
  }
  if (file != NULL) fclose(file);
  return tokens;
}

static void print_text(const asrdec_hypothesis* h, char** tokens, int64_t num_tokens) {
  for (int64_t i = 0; i < h->num_tokens; ++i) {
    const char* piece = h->tokens[i] < num_tokens ? tokens[h->tokens[i]] : "?";
    if (strncmp(piece, "\xe2\x96\x81", 3) == 0) { /* "▁": a word starts */
      if (i > 0) putchar(' ');
      piece += 3;
    }
    fputs(piece, stdout);
  }
}

static int check(asrdec_status status, const char* what) {
  if (status != ASRDEC_OK) fprintf(stderr, "%s: %s: %s\n", what, asrdec_status_name(status), asrdec_last_error());
  return status == ASRDEC_OK;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s logprobs.npy lengths.npy tokens.txt [cpu|cuda|auto]\n", argv[0]);
    return 2;
  }
  const char* device = argc > 4 ? argv[4] : "cpu";
  Array logprobs, lengths;
  if (!read_npy(argv[1], &logprobs) || !read_npy(argv[2], &lengths)) return 1;
  int64_t num_tokens = 0;
  char** tokens = read_tokens(argv[3], &num_tokens);
  DLTensor logprobs_t = dl_tensor(&logprobs), lengths_t = dl_tensor(&lengths);
  /* The tensors are on the host; a decoder on "cuda" needs them in device memory (an engine passes its own). */
  printf("asrdec %s, C API %d, decoding %lld utterances on %s\n", asrdec_version(), asrdec_c_api_version(),
         (long long)logprobs.shape[0], device);

  asrdec_ctc_greedy_decoder* greedy = NULL;
  asrdec_ctc_beam_decoder* beam = NULL;
  asrdec_results* greedy_results = NULL;
  asrdec_results* beam_results = NULL;
  asrdec_ctc_beam_config beam_config;
  asrdec_ctc_beam_config_init(&beam_config); /* sets struct_size and the defaults */
  beam_config.beam = 8;
  int ok = check(asrdec_ctc_greedy_create(device, NULL, &greedy), "greedy decoder") &&
           check(asrdec_ctc_greedy_decode(greedy, &logprobs_t, &lengths_t, NULL, &greedy_results), "greedy decode") &&
           check(asrdec_ctc_beam_create(device, &beam_config, &beam), "beam decoder") &&
           check(asrdec_ctc_beam_decode(beam, &logprobs_t, &lengths_t, NULL, &beam_results), "beam decode");
  for (int64_t u = 0; ok && u < 3 && u < asrdec_results_utterances(greedy_results); ++u) {
    asrdec_hypothesis g, b;
    ok = check(asrdec_results_get(greedy_results, u, 0, &g), "result") &&
         check(asrdec_results_get(beam_results, u, 0, &b), "result");
    printf("%lld greedy (%.2f): ", (long long)u, g.score);
    print_text(&g, tokens, num_tokens);
    printf("\n%lld beam 8 (%.2f): ", (long long)u, b.score);
    print_text(&b, tokens, num_tokens);
    putchar('\n');
  }
  /* A mistake is a status and a message, never a crash: */
  asrdec_results* none = NULL;
  if (asrdec_ctc_greedy_decode(greedy, NULL, &lengths_t, NULL, &none) == ASRDEC_INVALID_ARGUMENT) {
    printf("refused as expected: %s\n", asrdec_last_error());
  }
  asrdec_results_free(greedy_results);
  asrdec_results_free(beam_results);
  asrdec_ctc_greedy_free(greedy);
  asrdec_ctc_beam_free(beam);
  for (int64_t i = 0; i < num_tokens; ++i) free(tokens[i]);
  free(tokens);
  free(logprobs.data);
  free(lengths.data);
  return ok ? 0 : 1;
}
