/* consumer.c: a C program using the emitted cusnn_sm90 library through find_package: lists, falls back, runs an op. */
/*
 * Exit status: 0 the library ran its first problem, 1 a call failed, 2 no usable GPU (the message says why).
 */
#include <stdio.h>

#include <cuda_runtime_api.h>

#include "cusnn_sm90.h"

/* The application's fallback for problems the library was not emitted for (a real one would call cuDNN). */
static cusnn_sm90_status fallback(const cusnn_sm90_problem* problem, unsigned long long activation,
                                  unsigned long long filter, unsigned long long output, void* stream, void* user) {
  char key[256];
  (void)activation, (void)filter, (void)output, (void)stream;
  cusnn_sm90_problem_key(problem, key, sizeof key);
  ++*(int*)user;
  printf("fallback asked for %s\n", key);
  return CUSNN_SM90_ERROR_UNKNOWN_PROBLEM;
}

int main(void) {
  size_t i;
  int fallback_calls = 0;
  cusnn_sm90_problem unknown;
  cusnn_sm90_status status;
  float* buffers[3] = {NULL, NULL, NULL};
  void* workspace = NULL;
  cusnn_sm90_op op = NULL;
  char key[256];

  for (i = 0; i < cusnn_sm90_problem_count(); ++i) {
    cusnn_sm90_problem_key(cusnn_sm90_problem_at(i), key, sizeof key);
    printf("%-20s %s\n", cusnn_sm90_problem_name(i), key);
  }

  /* A batch the library was not emitted for: refused with a clear message, or handed to the fallback. */
  unknown = *cusnn_sm90_problem_at(0);
  unknown.n = 3;
  status = cusnn_sm90_conv_forward(&unknown, 1, 1, 1, NULL);
  printf("%s: %s\n", cusnn_sm90_status_string(status), cusnn_sm90_last_error_message());
  cusnn_sm90_set_fallback(fallback, &fallback_calls);
  status = cusnn_sm90_conv_forward(&unknown, 1, 1, 1, NULL);
  printf("with a fallback: %s (%d call)\n", cusnn_sm90_status_string(status), fallback_calls);
  cusnn_sm90_set_fallback(NULL, NULL);

  status = cusnn_sm90_check_device();
  if (status != CUSNN_SM90_SUCCESS) {
    fprintf(stderr, "consumer: %s: %s\n", cusnn_sm90_status_string(status), cusnn_sm90_last_error_message());
    return status == CUSNN_SM90_ERROR_CUDA ? 1 : 2;
  }
  {
    /* Problem 0 on zeroed inputs: dense fp32 tensors, sizes from the problem. */
    const cusnn_sm90_problem* p = cusnn_sm90_problem_at(0);
    const size_t o_out = (size_t)(p->d + 2 * p->pad_d - p->dilation_d * (p->t - 1) - 1) / p->stride_d + 1;
    const size_t p_out = (size_t)(p->h + 2 * p->pad_h - p->dilation_h * (p->r - 1) - 1) / p->stride_h + 1;
    const size_t q_out = (size_t)(p->w + 2 * p->pad_w - p->dilation_w * (p->s - 1) - 1) / p->stride_w + 1;
    const size_t sizes[3] = {(size_t)p->n * p->c * p->d * p->h * p->w,
                             (size_t)p->k * (p->c / p->groups) * p->t * p->r * p->s,
                             (size_t)p->n * p->k * o_out * p_out * q_out};
    for (i = 0; i < 3; ++i)
      if (cudaMalloc((void**)&buffers[i], sizes[i] * sizeof(float)) != cudaSuccess ||
          cudaMemset(buffers[i], 0, sizes[i] * sizeof(float)) != cudaSuccess) {
        fprintf(stderr, "consumer: cudaMalloc failed\n");
        return 1;
      }
    /* An op: the problem's plan set up once with this filter, then run (with the workspace it asks for). */
    status = cusnn_sm90_op_create(p, (unsigned long long)buffers[1], NULL, &op);
    if (status == CUSNN_SM90_SUCCESS && cusnn_sm90_op_workspace_size(op) > 0 &&
        cudaMalloc(&workspace, cusnn_sm90_op_workspace_size(op)) != cudaSuccess) {
      fprintf(stderr, "consumer: cudaMalloc failed\n");
      return 1;
    }
    if (status == CUSNN_SM90_SUCCESS)
      status = cusnn_sm90_op_run(op, (unsigned long long)buffers[0], (unsigned long long)buffers[2],
                                 (unsigned long long)workspace, NULL);
    if (status != CUSNN_SM90_SUCCESS || cudaDeviceSynchronize() != cudaSuccess) {
      fprintf(stderr, "consumer: %s: %s\n", cusnn_sm90_status_string(status), cusnn_sm90_last_error_message());
      return 1;
    }
    printf("ran %s with %s\n", cusnn_sm90_problem_name(0), cusnn_sm90_kernel_name(p, 90));
    cusnn_sm90_op_destroy(op);
    cudaFree(workspace);
    for (i = 0; i < 3; ++i) cudaFree(buffers[i]);
  }
  return 0;
}
