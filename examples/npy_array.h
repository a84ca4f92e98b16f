/*
 * A minimal .npy reader for the C examples (little-endian, C order, float16/float32/int32/int64, up to 3 dimensions):
 * the sample data as an engine would hold it in memory, and its DLPack view.
 */
#ifndef ASRDEC_EXAMPLES_NPY_ARRAY_H
#define ASRDEC_EXAMPLES_NPY_ARRAY_H

#include <dlpack/dlpack.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The data and shape of one array. */
typedef struct {
  void* data;
  int64_t shape[3];
  int ndim;
  DLDataType dtype;
} Array;

static int read_npy(const char* path, Array* out) {
  FILE* file = fopen(path, "rb");
  unsigned char prefix[10];
  if (file == NULL || fread(prefix, 1, 10, file) != 10 || memcmp(prefix, "\x93NUMPY", 6) != 0 || prefix[6] != 1) {
    fprintf(stderr, "%s: not a version-1 .npy file\n", path);
    if (file) fclose(file);
    return 0;
  }
  size_t header_size = (size_t)prefix[8] | ((size_t)prefix[9] << 8);
  char* header = calloc(header_size + 1, 1);
  if (header == NULL || fread(header, 1, header_size, file) != header_size) {
    fclose(file);
    free(header);
    return 0;
  }
  const char* descr = strstr(header, "'descr': '");
  const char* shape = strstr(header, "'shape': (");
  int ok = descr != NULL && shape != NULL && strstr(header, "'fortran_order': False") != NULL;
  if (ok) {
    descr += 10;
    if (strncmp(descr, "<f2", 3) == 0) out->dtype = (DLDataType){kDLFloat, 16, 1};
    else if (strncmp(descr, "<f4", 3) == 0) out->dtype = (DLDataType){kDLFloat, 32, 1};
    else if (strncmp(descr, "<i4", 3) == 0) out->dtype = (DLDataType){kDLInt, 32, 1};
    else if (strncmp(descr, "<i8", 3) == 0) out->dtype = (DLDataType){kDLInt, 64, 1};
    else ok = 0;
  }
  size_t count = 1;
  out->ndim = 0;
  for (const char* p = ok ? shape + 10 : ""; ok && *p != ')' && *p != '\0';) {
    char* end = NULL;
    long long size = strtoll(p, &end, 10);
    if (end == p || out->ndim == 3 || size < 0) {
      ok = 0;
      break;
    }
    out->shape[out->ndim++] = size;
    count *= (size_t)size;
    p = end;
    while (*p == ',' || *p == ' ') ++p;
  }
  free(header);
  out->data = ok ? malloc(count * out->dtype.bits / 8 + 1) : NULL;
  ok = ok && out->data != NULL && fread(out->data, out->dtype.bits / 8, count, file) == count;
  fclose(file);
  if (!ok) fprintf(stderr, "%s: unsupported .npy layout\n", path);
  return ok;
}

static DLTensor dl_tensor(Array* array) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = array->data;
  t.device = (DLDevice){kDLCPU, 0};
  t.ndim = array->ndim;
  t.dtype = array->dtype;
  t.shape = array->shape;
  t.strides = NULL; /* row-major */
  return t;
}

#endif /* ASRDEC_EXAMPLES_NPY_ARRAY_H */
