//! A loaded module: immutable, shared by every executor made from it and by
//! any number of threads.
use std::ffi::{CStr, CString};
use std::path::Path;
use std::ptr::{self, NonNull};
use std::sync::Arc;

use crate::dtype::DType;
use crate::error::{check, Error, Result, Status};
use crate::executor::{Executor, ExecutorOptions};
use crate::sys;
use crate::tensor::TensorInfo;

/// The runtime handle plus what the module declares, copied once at load.
pub(crate) struct ModuleHandle {
    pub(crate) raw: NonNull<sys::agate_module_t>,
    pub(crate) device: Device,
    target: String,
    inputs: Vec<TensorInfo>,
    outputs: Vec<TensorInfo>,
}

// SAFETY: the C API's contract: "A module is immutable after loading: any number
// of threads may use one module and create executors from it at the same time."
unsafe impl Send for ModuleHandle {}
unsafe impl Sync for ModuleHandle {}

impl Drop for ModuleHandle {
    fn drop(&mut self) {
        // Every executor holds an Arc of this handle, so none is left: the
        // contract's "every executor must have been freed first" holds.
        // SAFETY: the handle came from a load function and is freed once.
        unsafe { sys::agate_module_free(self.raw.as_ptr()) };
    }
}

/// A compiled agate module loaded into the runtime.
///
/// Cloning is cheap and shares the module; it is freed when the last clone and
/// the last [`Executor`] made from it are dropped. `Module` is `Send + Sync`:
/// share it between threads and give each thread its own executor.
#[derive(Clone)]
pub struct Module {
    handle: Arc<ModuleHandle>,
}

/// Refuses a library whose ABI major differs or whose minor is older than the
/// header this crate was generated from.
fn check_abi() -> Result<()> {
    // SAFETY: never fails.
    let version = unsafe { sys::agate_runtime_abi_version() };
    let (major, minor) = (version >> 16, version & 0xffff);
    if major != sys::AGATE_RUNTIME_ABI_VERSION_MAJOR || minor < sys::AGATE_RUNTIME_ABI_VERSION_MINOR {
        return Err(Error::new(
            Status::VersionMismatch,
            format!(
                "libagate_runtime.so implements ABI {}.{}; this crate needs {}.{} or a newer minor",
                major,
                minor,
                sys::AGATE_RUNTIME_ABI_VERSION_MAJOR,
                sys::AGATE_RUNTIME_ABI_VERSION_MINOR
            ),
        ));
    }
    Ok(())
}

fn module_options(device_id: i32) -> sys::agate_module_options {
    sys::agate_module_options { struct_size: std::mem::size_of::<sys::agate_module_options>() as u32, device_id }
}

/// What a dimension of an input or output is at run time (runtime ABI 1.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DimKind {
    /// Exactly `max` (== `min`).
    Static,
    /// Any extent in `min..=max`, given by the inputs (a batch symbol on axis 0, or a padded one such
    /// as a sequence length on any axes).
    Symbolic,
    /// Known after a run (`0..=max`): the output's run-time shape says.
    ValueDependent,
}

/// One dimension of an input or output: its bounds, symbol and kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DimInfo {
    pub min: i64,
    pub max: i64,
    /// The symbol's name ("N") for a symbolic dimension.
    pub symbol: Option<String>,
    pub kind: DimKind,
}

type DimFn = unsafe extern "C" fn(*const sys::agate_module_t, u32, i32, *mut sys::agate_dim_info) -> sys::agate_status_t;

fn dim_info(raw: *const sys::agate_module_t, dim_fn: DimFn, index: u32, axis: usize) -> Result<DimInfo> {
    // SAFETY: an all-zero agate_dim_info is a valid value to overwrite.
    let mut info: sys::agate_dim_info = unsafe { std::mem::zeroed() };
    let axis = i32::try_from(axis).map_err(|_| Error::new(Status::OutOfRange, format!("axis {} is too large", axis)))?;
    // SAFETY: raw is a live module; info is a valid out pointer.
    check(unsafe { dim_fn(raw, index, axis, &mut info) })?;
    let kind = match info.kind as u32 {
        sys::AGATE_DIM_SYMBOLIC => DimKind::Symbolic,
        sys::AGATE_DIM_VALUE_DEPENDENT => DimKind::ValueDependent,
        _ => DimKind::Static,
    };
    // SAFETY: symbol is NULL or borrowed from the live module.
    let symbol = if info.symbol.is_null() { None } else { Some(unsafe { owned_string(info.symbol) }) };
    Ok(DimInfo { min: info.min, max: info.max, symbol, kind })
}

/// Where a module's kernels run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    /// The host's CPUs.
    Cpu,
    /// The GPU with this CUDA ordinal.
    Cuda(i32),
}

/// How many GPUs the runtime can run CUDA modules on; `Status::Unavailable`
/// (with the reason) without a driver or GPU.
pub fn cuda_device_count() -> Result<i32> {
    let mut count = 0i32;
    // SAFETY: valid out pointer.
    check(unsafe { sys::agate_runtime_device_count(sys::DLDeviceType_kDLCUDA as i32, &mut count) })?;
    Ok(count)
}

fn path_to_cstring(path: &Path) -> Result<CString> {
    #[cfg(unix)]
    let bytes = {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes = path
        .to_str()
        .ok_or_else(|| Error::new(Status::InvalidArgument, format!("path {:?} is not UTF-8", path)))?
        .as_bytes()
        .to_vec();
    CString::new(bytes).map_err(|_| Error::new(Status::InvalidArgument, format!("path {:?} contains a NUL byte", path)))
}

/// Copies a string the module owns.
///
/// SAFETY: `raw` is NULL or a NUL-terminated string valid for the call.
unsafe fn owned_string(raw: *const std::os::raw::c_char) -> String {
    if raw.is_null() {
        String::new()
    } else {
        CStr::from_ptr(raw).to_string_lossy().into_owned()
    }
}

type InfoFn = unsafe extern "C" fn(*const sys::agate_module_t, u32, *mut sys::agate_tensor_info) -> sys::agate_status_t;
type CountFn = unsafe extern "C" fn(*const sys::agate_module_t, *mut u32) -> sys::agate_status_t;

fn tensor_infos(raw: *const sys::agate_module_t, count_fn: CountFn, info_fn: InfoFn) -> Result<Vec<TensorInfo>> {
    let mut count = 0u32;
    // SAFETY: raw is a live module; count is a valid out pointer.
    check(unsafe { count_fn(raw, &mut count) })?;
    (0..count)
        .map(|index| {
            // SAFETY: an all-zero agate_tensor_info is a valid (empty) value to overwrite.
            let mut info: sys::agate_tensor_info = unsafe { std::mem::zeroed() };
            // SAFETY: raw is live, index < count, info is a valid out pointer.
            check(unsafe { info_fn(raw, index, &mut info) })?;
            let shape = if info.ndim <= 0 || info.shape.is_null() {
                Vec::new()
            } else {
                // SAFETY: shape has ndim entries, borrowed from the live module.
                unsafe { std::slice::from_raw_parts(info.shape, info.ndim as usize) }.to_vec()
            };
            Ok(TensorInfo {
                // SAFETY: name is borrowed from the live module.
                name: unsafe { owned_string(info.name) },
                dtype: DType::from_dl(info.dtype),
                shape,
                bytes: info.bytes,
            })
        })
        .collect()
}

impl Module {
    /// Axis `axis` of input `name`: static, or a symbol's bounds (`Status::NotFound` for an
    /// unknown name, `Status::OutOfRange` past its dimensions). `inputs()` shows each dynamic
    /// dimension's upper bound.
    pub fn input_dim(&self, name: &str, axis: usize) -> Result<DimInfo> {
        let index = self.index_of(self.inputs(), "input", name)?;
        dim_info(self.handle.raw.as_ptr(), sys::agate_module_input_dim, index, axis)
    }

    /// Axis `axis` of output `name` (see `input_dim`); an executor's `output` has the run-time shape.
    pub fn output_dim(&self, name: &str, axis: usize) -> Result<DimInfo> {
        let index = self.index_of(self.outputs(), "output", name)?;
        dim_info(self.handle.raw.as_ptr(), sys::agate_module_output_dim, index, axis)
    }

    fn index_of(&self, tensors: &[TensorInfo], role: &str, name: &str) -> Result<u32> {
        tensors
            .iter()
            .position(|t| t.name == name)
            .map(|i| i as u32)
            .ok_or_else(|| Error::new(Status::NotFound, format!("the module has no {} named '{}'", role, name)))
    }

    /// Loads a module from a file (mapped read-only, constants used in place).
    /// `Status::NotFound` when the file does not exist, `Status::Corrupt` (and
    /// others, see runtime.h) when it is not a valid module.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Module> {
        check_abi()?;
        let path = path_to_cstring(path.as_ref())?;
        let mut raw = ptr::null_mut();
        // SAFETY: path is NUL-terminated and outlives the call; no kernel table.
        check(unsafe { sys::agate_module_load_from_file(path.as_ptr(), ptr::null(), &mut raw) })?;
        Module::adopt(raw)
    }

    /// Loads a module from a file onto a device: a CUDA module onto the GPU
    /// with CUDA ordinal `device_id` (`Status::OutOfRange` when there is no
    /// such GPU, `Status::Unavailable` with the reason when there is no driver
    /// or GPU); a CPU module needs `device_id` 0 (`Status::InvalidArgument`
    /// otherwise). [`from_file`](Self::from_file) is `device_id` 0.
    pub fn from_file_on_device(path: impl AsRef<Path>, device_id: i32) -> Result<Module> {
        check_abi()?;
        let path = path_to_cstring(path.as_ref())?;
        let options = module_options(device_id);
        let mut raw = ptr::null_mut();
        // SAFETY: path is NUL-terminated and outlives the call; options is read during the call.
        check(unsafe {
            sys::agate_module_load_from_file_with_options(path.as_ptr(), ptr::null(), &options, &mut raw)
        })?;
        Module::adopt(raw)
    }

    /// Like [`from_bytes`](Self::from_bytes), onto a device (see
    /// [`from_file_on_device`](Self::from_file_on_device)).
    pub fn from_bytes_on_device(bytes: &[u8], device_id: i32) -> Result<Module> {
        check_abi()?;
        let options = module_options(device_id);
        let mut raw = ptr::null_mut();
        // SAFETY: bytes is valid for its length during the call (the runtime copies it); options likewise.
        check(unsafe {
            sys::agate_module_load_from_memory_with_options(
                bytes.as_ptr() as *const _,
                bytes.len(),
                ptr::null(),
                &options,
                &mut raw,
            )
        })?;
        Module::adopt(raw)
    }

    /// Loads a module from bytes in memory; the runtime copies them, so `bytes`
    /// may be dropped as soon as this returns.
    pub fn from_bytes(bytes: &[u8]) -> Result<Module> {
        check_abi()?;
        let mut raw = ptr::null_mut();
        // SAFETY: bytes is valid for its length during the call; the runtime copies it.
        check(unsafe {
            sys::agate_module_load_from_memory(bytes.as_ptr() as *const _, bytes.len(), ptr::null(), &mut raw)
        })?;
        Module::adopt(raw)
    }

    /// Takes ownership of a freshly loaded module and copies its description.
    fn adopt(raw: *mut sys::agate_module_t) -> Result<Module> {
        let raw = NonNull::new(raw).ok_or_else(|| Error::new(Status::Internal, "the runtime returned a NULL module"))?;
        // From here on, dropping `handle` frees the module, also on the errors below.
        let mut handle =
            ModuleHandle { raw, device: Device::Cpu, target: String::new(), inputs: Vec::new(), outputs: Vec::new() };
        let mut where_: sys::DLDevice = sys::DLDevice { device_type: sys::DLDeviceType_kDLCPU, device_id: 0 };
        // SAFETY: raw is live; where_ is a valid out pointer.
        check(unsafe { sys::agate_module_device(raw.as_ptr(), &mut where_) })?;
        if where_.device_type == sys::DLDeviceType_kDLCUDA {
            handle.device = Device::Cuda(where_.device_id);
        }
        let mut target = ptr::null();
        // SAFETY: raw is live; target is a valid out pointer.
        check(unsafe { sys::agate_module_target(raw.as_ptr(), &mut target) })?;
        // SAFETY: the target string is borrowed from the live module.
        handle.target = unsafe { owned_string(target) };
        handle.inputs = tensor_infos(raw.as_ptr(), sys::agate_module_num_inputs, sys::agate_module_input_info)?;
        handle.outputs = tensor_infos(raw.as_ptr(), sys::agate_module_num_outputs, sys::agate_module_output_info)?;
        Ok(Module { handle: Arc::new(handle) })
    }

    /// Where the module's kernels run.
    pub fn device(&self) -> Device {
        self.handle.device
    }

    /// The target the module was compiled for (e.g. "llvm -mtriple=x86_64-linux-gnu").
    pub fn target(&self) -> &str {
        &self.handle.target
    }

    /// The model's inputs, in the module's order.
    pub fn inputs(&self) -> &[TensorInfo] {
        &self.handle.inputs
    }

    /// The model's outputs, in the module's order.
    pub fn outputs(&self) -> &[TensorInfo] {
        &self.handle.outputs
    }

    /// The input called `name`, if any.
    pub fn input(&self, name: &str) -> Option<&TensorInfo> {
        self.handle.inputs.iter().find(|t| t.name == name)
    }

    /// The output called `name`, if any.
    pub fn output(&self, name: &str) -> Option<&TensorInfo> {
        self.handle.outputs.iter().find(|t| t.name == name)
    }

    /// The number of kernel calls one run makes (the plan's length).
    pub fn num_calls(&self) -> Result<u32> {
        let mut count = 0u32;
        // SAFETY: live module, valid out pointer.
        check(unsafe { sys::agate_module_num_calls(self.handle.raw.as_ptr(), &mut count) })?;
        Ok(count)
    }

    /// The kernel that plan call `index` runs (kernels of a fused group are named
    /// after it). `Status::OutOfRange` when `index >= num_calls()`.
    pub fn call_kernel_name(&self, index: u32) -> Result<String> {
        self.handle.call_kernel_name(index)
    }

    /// The kernel of every plan call, in execution order (a kernel called
    /// several times appears once per call).
    pub fn call_kernel_names(&self) -> Result<Vec<String>> {
        (0..self.num_calls()?).map(|index| self.call_kernel_name(index)).collect()
    }

    /// A new executor whose parallel loops use the runtime's shared thread pool.
    pub fn executor(&self) -> Result<Executor> {
        Executor::new(self.handle.clone(), ExecutorOptions::default())
    }

    /// A new executor with `options`.
    pub fn executor_with(&self, options: ExecutorOptions) -> Result<Executor> {
        Executor::new(self.handle.clone(), options)
    }
}

impl ModuleHandle {
    pub(crate) fn call_kernel_name(&self, index: u32) -> Result<String> {
        let mut name = ptr::null();
        // SAFETY: live module, valid out pointer; the runtime checks the index.
        check(unsafe { sys::agate_module_call_kernel_name(self.raw.as_ptr(), index, &mut name) })?;
        // SAFETY: the name is borrowed from the live module and copied here.
        Ok(unsafe { owned_string(name) })
    }

    pub(crate) fn inputs(&self) -> &[TensorInfo] {
        &self.inputs
    }

    pub(crate) fn outputs(&self) -> &[TensorInfo] {
        &self.outputs
    }
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Module")
            .field("target", &self.handle.target)
            .field("device", &self.handle.device)
            .field("inputs", &self.handle.inputs)
            .field("outputs", &self.handle.outputs)
            .finish()
    }
}
