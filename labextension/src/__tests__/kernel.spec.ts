import { chosenSpec, notebookTarget } from '../kernel';
import { IKernelsResponse } from '../models';

const STUDIO: IKernelsResponse = {
  kernels: [
    {
      name: 'hyperpod-rl',
      display_name: 'Python 3.12 (hyperpod-rl)',
      python: '/home/sagemaker-user/.venvs/hyperpod-rl/bin/python',
      has_hyperpod_rl: true,
      detail: 'imports hyperpod_rl'
    },
    {
      name: 'python3',
      display_name: 'Python 3 (ipykernel)',
      python: '/opt/conda/bin/python',
      has_hyperpod_rl: false,
      detail: 'has no hyperpod_rl'
    }
  ],
  chosen: 'hyperpod-rl',
  message: "kernel 'hyperpod-rl' imports hyperpod_rl"
};

describe('notebookTarget', () => {
  it('uses the active notebook only when its kernel can import hyperpod_rl', () => {
    expect(notebookTarget('hyperpod-rl', STUDIO)).toBe('active');
    expect(notebookTarget('python3', STUDIO)).toBe('new'); // Studio's server kernel
    expect(notebookTarget(null, STUDIO)).toBe('new'); // no notebook open, or no kernel
  });

  it('says none when no kernel can import it', () => {
    const none = {
      ...STUDIO,
      kernels: [STUDIO.kernels[1]],
      chosen: null,
      message: 'no registered Jupyter kernel can import hyperpod_rl'
    };
    expect(notebookTarget('python3', none)).toBe('none');
    expect(chosenSpec(none)).toBeNull();
  });

  it('gives the chosen kernel as a kernelspec for the tutorial copies', () => {
    expect(chosenSpec(STUDIO)).toEqual({
      name: 'hyperpod-rl',
      display_name: 'Python 3.12 (hyperpod-rl)'
    });
  });
});
