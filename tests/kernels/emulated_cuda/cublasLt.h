#pragma once
// For common/check.h's declarations only.
typedef int cublasStatus_t;
