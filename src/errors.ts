/**
 * Every error vmaf-stream raises is a VmafError with a stable `code`, so callers can
 * branch on the code and the CLI can map it to an exit status. Messages name the input
 * (and the frame, where one is involved) and say what is wrong.
 */
export type VmafErrorCode =
  | 'E_USAGE'             // bad options or arguments
  | 'E_INPUT_NOT_FOUND'   // a path that does not exist or cannot be opened
  | 'E_INPUT_FORMAT'      // not a video, corrupt header, unsupported pixel format
  | 'E_INPUT_TRUNCATED'   // a frame ends before its size says
  | 'E_INPUT_MISMATCH'    // reference and distorted disagree (size, bit depth)
  | 'E_INPUT_EMPTY'       // no frames at all
  | 'E_INPUT_STALLED'     // a live input sent no frame for longer than the stall timeout
  | 'E_INPUT_NOT_ALLOWED' // an input outside the allowed protocols (options.protocols)
  | 'E_FRAME_TOO_SMALL'   // below the minimum size VMAF's filters can handle
  | 'E_FRAME_TOO_LARGE'   // a frame larger than the host can allocate
  | 'E_OUT_OF_MEMORY'     // the run's frame buffers need more memory than the machine can give
  | 'E_FFMPEG'            // ffmpeg missing or failed
  | 'E_MODEL'             // unreadable or invalid model file
  | 'E_NATIVE'            // the cpu backend's addon is missing or failed
  | 'E_GPU'               // no usable adapter, device lost, kernel failure
  | 'E_OUTPUT'            // cannot write a log
  | 'E_QUEUE';            // the queue (Redis) is unreachable or lost work

export class VmafError extends Error {
  readonly code: VmafErrorCode;
  constructor(code: VmafErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'VmafError';
    this.code = code;
  }
}

/** Bad options: the CLI exits with status 2 for these. */
export class UsageError extends VmafError {
  constructor(message: string) {
    super('E_USAGE', message);
    this.name = 'UsageError';
  }
}

/** A problem with one input; `input` is its label (path or '-') and `frame` its index where known. */
export class InputError extends VmafError {
  readonly input: string;
  readonly frame: number | undefined;
  constructor(code: VmafErrorCode, input: string, message: string, frame?: number, options?: { cause?: unknown }) {
    super(code, `${input}${frame === undefined ? '' : `: frame ${frame}`}: ${message}`, options);
    this.name = 'InputError';
    this.input = input;
    this.frame = frame;
  }
}

export class ModelError extends VmafError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('E_MODEL', message, options);
    this.name = 'ModelError';
  }
}

export class BackendError extends VmafError {
  constructor(code: 'E_NATIVE' | 'E_GPU', message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'BackendError';
  }
}
