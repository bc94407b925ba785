#!/usr/bin/env bash
# Build the hyperpod-rl cluster image and push it to Amazon ECR.
#
#   FLASH_ATTN_WHEEL=<url of a prebuilt flash_attn-2.8.3 wheel for cp312 / torch 2.11 / CUDA 13> \
#   AWS_REGION=us-west-2 [ECR_REPO=hyperpod-rl] [TARGET=final|efa] [TAG=...] container/build_and_push.sh
#
# Needs docker (with buildx) and the AWS CLI v2 with credentials allowed to push to ECR. Run it from
# any directory; the build context is the repository root. See docs/container.md.
set -euo pipefail

: "${AWS_REGION:?set AWS_REGION, e.g. us-west-2}"
: "${FLASH_ATTN_WHEEL:?set FLASH_ATTN_WHEEL to a prebuilt flash-attn 2.8.3 wheel (cp312, torch 2.11, CUDA 13)}"
ECR_REPO="${ECR_REPO:-hyperpod-rl}"
TARGET="${TARGET:-final}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ACCOUNT="$(aws sts get-caller-identity --query Account --output text)"
REGISTRY="${ACCOUNT}.dkr.ecr.${AWS_REGION}.amazonaws.com"
GIT_SHA="$(git -C "${ROOT}" rev-parse --short HEAD)"
SUFFIX=""
if [ "${TARGET}" = "efa" ]; then SUFFIX="-efa"; fi
TAG="${TAG:-ray2.56.0-skyrl0.3.0-${GIT_SHA}${SUFFIX}}"
IMAGE="${REGISTRY}/${ECR_REPO}:${TAG}"

aws ecr describe-repositories --region "${AWS_REGION}" --repository-names "${ECR_REPO}" >/dev/null 2>&1 \
  || aws ecr create-repository --region "${AWS_REGION}" --repository-name "${ECR_REPO}" >/dev/null
aws ecr get-login-password --region "${AWS_REGION}" | docker login --username AWS --password-stdin "${REGISTRY}"

docker buildx build \
  --platform linux/amd64 \
  --file "${ROOT}/container/Dockerfile" \
  --target "${TARGET}" \
  --build-arg "FLASH_ATTN_WHEEL=${FLASH_ATTN_WHEEL}" \
  --tag "${IMAGE}" \
  --push \
  "${ROOT}"

echo "pushed ${IMAGE}"
echo "use it in a ClusterSpec: image=${IMAGE} (its rayVersion is 2.56.0)"
