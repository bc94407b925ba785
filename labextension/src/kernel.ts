/**
 * Where hyperpod-rl code runs: only in a kernel the server found able to import hyperpod_rl
 * (GET kernels, hyperpod_rl_jupyterlab/kernels.py). Pure functions, unit-tested.
 */
import { IKernelsResponse } from './models';

/** Kernel names that can import hyperpod_rl. */
export function capableKernels(kernels: IKernelsResponse): string[] {
  return kernels.kernels.filter(k => k.has_hyperpod_rl).map(k => k.name);
}

/**
 * Whether code for a run goes into the active notebook or a new one: the active notebook only
 * when its kernel can import hyperpod_rl; else a new notebook on the chosen kernel; 'none' when
 * no kernel can (the caller shows `kernels.message`).
 */
export function notebookTarget(
  activeKernel: string | null | undefined,
  kernels: IKernelsResponse
): 'active' | 'new' | 'none' {
  if (activeKernel && capableKernels(kernels).includes(activeKernel)) {
    return 'active';
  }
  return kernels.chosen ? 'new' : 'none';
}

/** The chosen kernel as a notebook kernelspec (`{name, display_name}`), or null. */
export function chosenSpec(
  kernels: IKernelsResponse
): { name: string; display_name: string } | null {
  const k = kernels.kernels.find(x => x.name === kernels.chosen);
  return k ? { name: k.name, display_name: k.display_name } : null;
}
