//! An executor: the memory of one run of a module (arena, workspace, outputs),
//! used by one thread at a time.
use std::cell::Cell;
use std::ffi::CString;
use std::ptr::{self, NonNull};
use std::sync::Arc;

use crate::error::{check, Error, Result, Status};
use crate::module::{Device, ModuleHandle};
use crate::sys;
use crate::tensor::{AlignedBuffer, TensorView};

/// Options of [`Module::executor_with`](crate::Module::executor_with).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExecutorOptions {
    /// 0: kernels' parallel loops use the runtime's shared thread pool
    /// ([`set_num_threads`](crate::set_num_threads)); 1: they run on the calling thread.
    pub num_threads: i32,
}

/// Runs a module. Made by [`Module::executor`](crate::Module::executor); keeps
/// its module alive. `Send` but not `Sync`: move it to another thread, but
/// never use one executor from two threads at once (give each thread its own).
///
/// Inputs are copied into memory the executor owns, so the caller's data may
/// change or go away after [`set_input`](Self::set_input). Output views borrow
/// the executor: the borrow checker ends them before the next [`run`](Self::run).
///
/// CUDA modules: host inputs are copied to the GPU at each run; outputs stay on
/// the GPU, and [`output`](Self::output) copies one to host memory the first
/// time it is asked for after a run. Device memory can be passed without copies:
/// [`set_input_device_ptr`](Self::set_input_device_ptr),
/// [`output_device_ptr`](Self::output_device_ptr),
/// [`set_output_device_ptr`](Self::set_output_device_ptr).
pub struct Executor {
    raw: NonNull<sys::agate_executor_t>,
    bound: Vec<Option<AlignedBuffer>>,
    // CUDA modules: each output's host copy, and whether it predates the last run.
    // A copy is written only while stale, when no view of it can exist (views
    // borrow the executor; run needs it mutably).
    host_outputs: Vec<AlignedBuffer>,
    stale: Vec<Cell<bool>>,
    // Dropped after `raw` is freed (Drop::drop runs before fields drop).
    module: Arc<ModuleHandle>,
}

// SAFETY: the C API allows an executor to be used by any one thread at a time;
// `&mut self` on every mutating call and the absence of `Sync` guarantee that.
unsafe impl Send for Executor {}

impl Drop for Executor {
    fn drop(&mut self) {
        // SAFETY: created by agate_executor_create and freed once, before its module.
        unsafe { sys::agate_executor_free(self.raw.as_ptr()) };
    }
}

fn name_to_cstring(name: &str) -> Result<CString> {
    CString::new(name).map_err(|_| Error::new(Status::InvalidArgument, format!("name {:?} contains a NUL byte", name)))
}

impl Executor {
    pub(crate) fn new(module: Arc<ModuleHandle>, options: ExecutorOptions) -> Result<Executor> {
        let c_options = sys::agate_executor_options {
            struct_size: std::mem::size_of::<sys::agate_executor_options>() as u32,
            num_threads: options.num_threads,
        };
        let mut raw = ptr::null_mut();
        // SAFETY: the module is live (we hold its Arc); options and raw are valid pointers.
        check(unsafe { sys::agate_executor_create(module.raw.as_ptr(), &c_options, &mut raw) })?;
        let raw = NonNull::new(raw).ok_or_else(|| Error::new(Status::Internal, "the runtime returned a NULL executor"))?;
        let bound = (0..module.inputs().len()).map(|_| None).collect();
        let mut executor = Executor { raw, bound, host_outputs: Vec::new(), stale: Vec::new(), module };
        if executor.module.device != Device::Cpu {
            for info in executor.module.outputs() {
                executor.host_outputs.push(AlignedBuffer::zeroed(info.bytes as usize)?);
                executor.stale.push(Cell::new(true));
            }
        }
        Ok(executor)
    }

    fn mark_outputs_stale(&self) {
        for stale in &self.stale {
            stale.set(true);
        }
    }

    /// A DLTensor of input or output `info` over device address `address` on the module's GPU.
    fn device_tensor(&self, info: &crate::TensorInfo, address: u64) -> Result<sys::DLTensor> {
        let device_id = match self.module.device {
            Device::Cuda(id) => id,
            Device::Cpu => {
                return Err(Error::new(Status::Unsupported, "the module runs on the CPU: it takes no device memory"))
            }
        };
        Ok(sys::DLTensor {
            data: address as usize as *mut _,
            device: sys::DLDevice { device_type: sys::DLDeviceType_kDLCUDA, device_id },
            ndim: info.shape.len() as i32,
            dtype: info.dtype.to_dl(),
            // The runtime reads the shape during the call only; the module outlives it.
            shape: info.shape.as_ptr() as *mut i64,
            strides: ptr::null_mut(),
            byte_offset: 0,
        })
    }

    fn input_index(&self, name: &str) -> Result<u32> {
        let name = name_to_cstring(name)?;
        let mut index = 0u32;
        // SAFETY: live module, NUL-terminated name, valid out pointer.
        check(unsafe { sys::agate_module_find_input(self.module.raw.as_ptr(), name.as_ptr(), &mut index) })?;
        Ok(index)
    }

    fn output_index(&self, name: &str) -> Result<u32> {
        let name = name_to_cstring(name)?;
        let mut index = 0u32;
        // SAFETY: live module, NUL-terminated name, valid out pointer.
        check(unsafe { sys::agate_module_find_output(self.module.raw.as_ptr(), name.as_ptr(), &mut index) })?;
        Ok(index)
    }

    /// Copies `tensor` in as input `name`. The runtime checks it against the
    /// module (dtype, shape): `Status::InvalidArgument` naming the input and what
    /// differs, `Status::NotFound` for an unknown name. On error the input keeps
    /// its previous value.
    pub fn set_input(&mut self, name: &str, tensor: &TensorView<'_>) -> Result<()> {
        let index = self.input_index(name)?;
        let buffer = AlignedBuffer::copy_from(tensor.as_bytes())?;
        let dl = sys::DLTensor {
            data: buffer.as_mut_ptr() as *mut _,
            device: sys::DLDevice { device_type: sys::DLDeviceType_kDLCPU, device_id: 0 },
            ndim: tensor.shape().len() as i32,
            dtype: tensor.dtype().to_dl(),
            // The runtime reads the shape during the call only.
            shape: tensor.shape().as_ptr() as *mut i64,
            strides: ptr::null_mut(),
            byte_offset: 0,
        };
        // SAFETY: live executor; dl is read during the call; buffer.data stays
        // valid while bound (it is stored below and freed only when replaced or
        // when the executor is dropped).
        check(unsafe { sys::agate_executor_set_input(self.raw.as_ptr(), index, &dl) })?;
        self.bound[index as usize] = Some(buffer);
        Ok(())
    }

    /// Shorthand for `set_input(name, &TensorView::new(shape, data)?)`.
    pub fn set_input_slice<T: crate::Element>(&mut self, name: &str, shape: &[i64], data: &[T]) -> Result<()> {
        self.set_input(name, &TensorView::new(shape, data)?)
    }

    /// Binds input `name` to device memory of the module's GPU at `address`
    /// (for example another executor's [`output_device_ptr`](Self::output_device_ptr)
    /// or a tensor of another CUDA library): no copy. The runtime checks that
    /// the driver knows the address as memory of that GPU, 16-byte aligned, with
    /// room for the whole input. `Status::Unsupported` for CPU modules.
    ///
    /// # Safety
    /// The memory must hold the input (its dtype and shape), stay allocated and
    /// unchanged by others until the last [`run`](Self::run) that reads it has
    /// returned, and its writes must be complete when `run` is called.
    pub unsafe fn set_input_device_ptr(&mut self, name: &str, address: u64) -> Result<()> {
        let index = self.input_index(name)?;
        let info = self.module.inputs()[index as usize].clone();
        let dl = self.device_tensor(&info, address)?;
        // SAFETY: live executor; dl is read during the call; the caller keeps the memory valid.
        check(sys::agate_executor_set_input(self.raw.as_ptr(), index, &dl))?;
        self.bound[index as usize] = None;
        Ok(())
    }

    /// Makes runs write output `name` into device memory of the module's GPU at
    /// `address` (no copy); checked like
    /// [`set_input_device_ptr`](Self::set_input_device_ptr).
    ///
    /// # Safety
    /// The memory must hold the output and stay allocated, and not be read or
    /// written by others during a run, until another binding replaces it
    /// ([`reset_output`](Self::reset_output)) or the executor is dropped.
    pub unsafe fn set_output_device_ptr(&mut self, name: &str, address: u64) -> Result<()> {
        let index = self.output_index(name)?;
        let info = self.module.outputs()[index as usize].clone();
        let dl = self.device_tensor(&info, address)?;
        // SAFETY: live executor; dl is read during the call; the caller keeps the memory valid.
        check(sys::agate_executor_set_output(self.raw.as_ptr(), index, &dl))?;
        self.mark_outputs_stale();
        Ok(())
    }

    /// Makes runs write output `name` into the executor's own memory again.
    pub fn reset_output(&mut self, name: &str) -> Result<()> {
        let index = self.output_index(name)?;
        // SAFETY: live executor; NULL rebinds the executor's own buffer.
        check(unsafe { sys::agate_executor_set_output(self.raw.as_ptr(), index, ptr::null()) })?;
        self.mark_outputs_stale();
        Ok(())
    }

    /// The device address of output `name` on the module's GPU (the
    /// executor's memory, or what [`set_output_device_ptr`](Self::set_output_device_ptr)
    /// bound): valid until the executor is dropped, overwritten by each run.
    /// `Status::Unsupported` for CPU modules (use [`output`](Self::output)).
    pub fn output_device_ptr(&self, name: &str) -> Result<u64> {
        if self.module.device == Device::Cpu {
            return Err(Error::new(Status::Unsupported, "the module runs on the CPU: its outputs are host memory"));
        }
        let index = self.output_index(name)?;
        // SAFETY: an all-zero DLTensor is a valid value to overwrite.
        let mut dl: sys::DLTensor = unsafe { std::mem::zeroed() };
        // SAFETY: live executor; get_output only reads it and fills dl.
        check(unsafe { sys::agate_executor_get_output(self.raw.as_ptr(), index, &mut dl) })?;
        Ok(dl.data as usize as u64 + dl.byte_offset)
    }

    /// Runs the module once; every input must have been set.
    pub fn run(&mut self) -> Result<()> {
        self.mark_outputs_stale();
        // SAFETY: live executor, used by this thread only (&mut self).
        check(unsafe { sys::agate_executor_run(self.raw.as_ptr()) })
    }

    /// Runs the module once, like [`run`](Self::run), timing every kernel call:
    /// returns, in plan order, each call's kernel name (as
    /// [`Module::call_kernel_name`](crate::Module::call_kernel_name) gives it) and
    /// its time in nanoseconds: wall time on CPUs (monotonic clock, parallel
    /// loops included), device time between CUDA events on GPUs. Outputs are
    /// the same as after `run`.
    pub fn run_profiled(&mut self) -> Result<Vec<(String, u64)>> {
        self.mark_outputs_stale();
        let mut count = 0u32;
        // SAFETY: live module, valid out pointer.
        check(unsafe { sys::agate_module_num_calls(self.module.raw.as_ptr(), &mut count) })?;
        let names = (0..count).map(|index| self.module.call_kernel_name(index)).collect::<Result<Vec<_>>>()?;
        // At least one element, so the pointer is never NULL, also for an empty plan.
        let mut ns = vec![0u64; count.max(1) as usize];
        // SAFETY: live executor used by this thread only (&mut self); ns holds at
        // least `count` entries, which is all the runtime writes.
        check(unsafe { sys::agate_executor_run_profiled(self.raw.as_ptr(), ns.as_mut_ptr(), count) })?;
        Ok(names.into_iter().zip(ns).collect())
    }

    /// A view of output `name`, valid until the next `run` (enforced by the
    /// borrow). For a CUDA module, a host copy made on the first call after a run.
    pub fn output(&self, name: &str) -> Result<TensorView<'_>> {
        let index = self.output_index(name)?;
        if self.module.device != Device::Cpu {
            return self.host_output(index);
        }
        // SAFETY: an all-zero DLTensor is a valid value to overwrite.
        let mut dl: sys::DLTensor = unsafe { std::mem::zeroed() };
        // SAFETY: live executor; get_output only reads it and fills dl.
        check(unsafe { sys::agate_executor_get_output(self.raw.as_ptr(), index, &mut dl) })?;
        let info = &self.module.outputs()[index as usize];
        // The run-time shape (for a module with dynamic shapes, what the last run produced): the
        // runtime keeps it in the executor until the next run, or in the module, both of which
        // outlive this view (a run needs a borrow this view's lifetime excludes).
        let shape: &[i64] = if dl.ndim <= 0 || dl.shape.is_null() {
            &[]
        } else {
            // SAFETY: dl.shape holds dl.ndim entries, valid as described above.
            unsafe { std::slice::from_raw_parts(dl.shape, dl.ndim as usize) }
        };
        let bytes = shape.iter().map(|&d| d as usize).product::<usize>() * info.dtype.element_bytes();
        let data: &[u8] = if bytes == 0 || dl.data.is_null() {
            &[]
        } else {
            // SAFETY: the runtime's output memory holds the run-time shape's bytes (at most
            // info.bytes) and stays unchanged until the next run or the executor's free, both of
            // which need a borrow this view's lifetime excludes.
            unsafe { std::slice::from_raw_parts((dl.data as *const u8).add(dl.byte_offset as usize), bytes) }
        };
        TensorView::from_bytes(info.dtype, shape, data)
    }

    /// Output `index` of a CUDA module, copied to host memory when stale.
    fn host_output(&self, index: u32) -> Result<TensorView<'_>> {
        let info = &self.module.outputs()[index as usize];
        let buffer = &self.host_outputs[index as usize];
        if self.stale[index as usize].get() {
            let dl = sys::DLTensor {
                data: buffer.as_mut_ptr() as *mut _,
                device: sys::DLDevice { device_type: sys::DLDeviceType_kDLCPU, device_id: 0 },
                ndim: info.shape.len() as i32,
                dtype: info.dtype.to_dl(),
                shape: info.shape.as_ptr() as *mut i64,
                strides: ptr::null_mut(),
                byte_offset: 0,
            };
            // SAFETY: live executor; the buffer holds info.bytes bytes and no view
            // of it exists while it is stale (see `host_outputs`).
            check(unsafe { sys::agate_executor_copy_output(self.raw.as_ptr(), index, &dl) })?;
            self.stale[index as usize].set(false);
        }
        // SAFETY: the buffer holds info.bytes initialized bytes, written again only
        // after a run, which needs a borrow this view's lifetime excludes.
        let data = unsafe { std::slice::from_raw_parts(buffer.as_mut_ptr() as *const u8, info.bytes as usize) };
        TensorView::from_bytes(info.dtype, &info.shape, data)
    }

    /// The arena bytes this executor holds for intermediate tensors.
    pub fn arena_bytes(&self) -> Result<u64> {
        let mut bytes = 0u64;
        // SAFETY: live executor, valid out pointer.
        check(unsafe { sys::agate_executor_arena_bytes(self.raw.as_ptr(), &mut bytes) })?;
        Ok(bytes)
    }
}
