/* Classify a batch of images with the model lowerline exported
 * (classifier.h, libclassifier.a): no lowerline, Python or malloc at run time.
 *
 *   classify                  a synthetic batch; prints each image's class
 *   classify IN.bin OUT.bin   the batch from IN.bin (float32, CLASSIFIER_IMAGES_ELEMENTS
 *                             of them), the probabilities to OUT.bin
 */
#include <stdio.h>

#include "classifier.h"

static float images[CLASSIFIER_IMAGES_ELEMENTS];
static float probabilities[CLASSIFIER_OUTPUT0_ELEMENTS];
/* The workspace: static, sized and aligned by the header. */
static unsigned char workspace[CLASSIFIER_WORKSPACE_BYTES + 1]
    __attribute__((aligned(CLASSIFIER_WORKSPACE_ALIGNMENT)));

static int read_file(const char *path, void *data, size_t bytes) {
  FILE *f = fopen(path, "rb");
  size_t got = f ? fread(data, 1, bytes, f) : 0;
  if (f)
    fclose(f);
  return got == bytes;
}

static int write_file(const char *path, const void *data, size_t bytes) {
  FILE *f = fopen(path, "wb");
  size_t put = f ? fwrite(data, 1, bytes, f) : 0;
  if (f)
    fclose(f);
  return put == bytes;
}

int main(int argc, char **argv) {
  if (argc == 3) {
    if (!read_file(argv[1], images, sizeof images)) {
      fprintf(stderr, "cannot read %zu bytes from %s\n", sizeof images, argv[1]);
      return 2;
    }
  } else {
    for (int i = 0; i < CLASSIFIER_IMAGES_ELEMENTS; ++i)
      images[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
  }
  classifier_inputs in = {images};
  classifier_outputs out = {probabilities};
  int status = classifier_run(&in, &out, workspace);
  if (status != CLASSIFIER_OK) {
    fprintf(stderr, "classifier_run: status %d (%s)\n", status,
            status == CLASSIFIER_ERROR_CHECK_FAILED ? classifier_error_message() : "");
    return 1;
  }
  if (argc == 3)
    return write_file(argv[2], probabilities, sizeof probabilities) ? 0 : 2;
  int classes = CLASSIFIER_OUTPUT0_ELEMENTS / 2; /* the example batch holds 2 images */
  for (int image = 0; image < 2; ++image) {
    int best = 0;
    for (int c = 1; c < classes; ++c)
      if (probabilities[image * classes + c] > probabilities[image * classes + best])
        best = c;
    printf("image %d: class %d (p=%.3f)\n", image, best, probabilities[image * classes + best]);
  }
  printf("workspace: %d bytes (lower bound %d)\n", CLASSIFIER_WORKSPACE_BYTES,
         CLASSIFIER_WORKSPACE_LOWER_BOUND_BYTES);
  return 0;
}
