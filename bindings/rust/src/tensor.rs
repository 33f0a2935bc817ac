//! Tensors as the bindings see them: a module's description of an input or
//! output ([`TensorInfo`]) and borrowed, typed views of dense row-major data
//! ([`TensorView`]).
use std::alloc::{self, Layout};
use std::fmt;
use std::ptr::NonNull;

use crate::dtype::{DType, Element};
use crate::error::{Error, Result, Status};

/// A model input or output as the module declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<i64>,
    /// The tensor's size in bytes.
    pub bytes: u64,
}

impl TensorInfo {
    /// The number of elements (the product of the shape).
    pub fn num_elements(&self) -> usize {
        self.shape.iter().product::<i64>() as usize
    }
}

impl fmt::Display for TensorInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}{:?}", self.name, self.dtype, self.shape)
    }
}

/// Dense row-major tensor data borrowed for `'a`: the caller's input, or an
/// executor's output (then valid until the executor runs again, which the
/// borrow checker enforces).
#[derive(Debug, Clone, Copy)]
pub struct TensorView<'a> {
    dtype: DType,
    shape: &'a [i64],
    data: &'a [u8],
}

fn element_count(shape: &[i64]) -> Result<usize> {
    let mut count: usize = 1;
    for &dim in shape {
        let dim = usize::try_from(dim)
            .map_err(|_| Error::new(Status::InvalidArgument, format!("shape {:?} has a negative dimension", shape)))?;
        count = count
            .checked_mul(dim)
            .ok_or_else(|| Error::new(Status::InvalidArgument, format!("shape {:?} overflows", shape)))?;
    }
    Ok(count)
}

impl<'a> TensorView<'a> {
    /// Views `data` as a tensor of `shape`; the element count must match.
    pub fn new<T: Element>(shape: &'a [i64], data: &'a [T]) -> Result<TensorView<'a>> {
        let count = element_count(shape)?;
        if count != data.len() {
            return Err(Error::new(
                Status::InvalidArgument,
                format!("shape {:?} holds {} elements, the data has {}", shape, count, data.len()),
            ));
        }
        // SAFETY: T is a plain number type (Element is sealed), so its bytes are initialized.
        let bytes = unsafe { std::slice::from_raw_parts(data.as_ptr() as *const u8, std::mem::size_of_val(data)) };
        Ok(TensorView { dtype: T::DTYPE, shape, data: bytes })
    }

    /// Views raw bytes as a tensor of `dtype` and `shape` (e.g. float16 data).
    pub fn from_bytes(dtype: DType, shape: &'a [i64], data: &'a [u8]) -> Result<TensorView<'a>> {
        let expected = element_count(shape)?.checked_mul(dtype.element_bytes());
        if expected != Some(data.len()) {
            return Err(Error::new(
                Status::InvalidArgument,
                format!("a {} tensor of shape {:?} needs {:?} bytes, {} given", dtype, shape, expected, data.len()),
            ));
        }
        Ok(TensorView { dtype, shape, data })
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    pub fn shape(&self) -> &'a [i64] {
        self.shape
    }

    pub fn as_bytes(&self) -> &'a [u8] {
        self.data
    }

    /// The elements as a slice of `T`, without copying: an error when `T` is not
    /// the tensor's dtype or the data is not aligned for `T`.
    pub fn as_slice<T: Element>(&self) -> Result<&'a [T]> {
        if T::DTYPE != self.dtype {
            return Err(Error::new(
                Status::InvalidArgument,
                format!("the tensor holds {}, not {}", self.dtype, T::DTYPE),
            ));
        }
        if self.data.is_empty() {
            return Ok(&[]);
        }
        if self.data.as_ptr() as usize % std::mem::align_of::<T>() != 0 {
            return Err(Error::new(Status::InvalidArgument, format!("the tensor's data is not aligned for {}", T::DTYPE)));
        }
        let len = self.data.len() / std::mem::size_of::<T>();
        // SAFETY: dtype, size and alignment checked; every bit pattern is a valid T.
        Ok(unsafe { std::slice::from_raw_parts(self.data.as_ptr() as *const T, len) })
    }

    /// The elements copied into a `Vec<T>` (dtype checked as in [`as_slice`](Self::as_slice)).
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        self.as_slice::<T>().map(|s| s.to_vec())
    }
}

/// Bytes the runtime may read in place: 64-byte aligned (so aligned for every
/// element type), owned, freed on drop.
pub(crate) struct AlignedBuffer {
    ptr: NonNull<u8>,
    layout: Layout,
}

impl AlignedBuffer {
    const ALIGNMENT: usize = 64;

    pub(crate) fn copy_from(bytes: &[u8]) -> Result<AlignedBuffer> {
        let buffer = AlignedBuffer::zeroed(bytes.len())?;
        // SAFETY: the new allocation holds at least bytes.len() bytes and does not overlap `bytes`.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), buffer.as_mut_ptr(), bytes.len()) };
        Ok(buffer)
    }

    /// `len` zero bytes (at least one byte is allocated).
    pub(crate) fn zeroed(len: usize) -> Result<AlignedBuffer> {
        let layout = Layout::from_size_align(len.max(1), Self::ALIGNMENT)
            .map_err(|_| Error::new(Status::ResourceExhausted, format!("cannot lay out {} bytes", len)))?;
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let ptr =
            NonNull::new(raw).ok_or_else(|| Error::new(Status::ResourceExhausted, format!("cannot allocate {} bytes", len)))?;
        Ok(AlignedBuffer { ptr, layout })
    }

    pub(crate) fn as_mut_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Drop for AlignedBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated in copy_from with this layout.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

// SAFETY: the buffer is uniquely owned memory with no thread affinity.
unsafe impl Send for AlignedBuffer {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_check_element_counts() {
        let data = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        let view = TensorView::new(&[2, 3], &data).unwrap();
        assert_eq!(view.dtype(), DType::F32);
        assert_eq!(view.as_bytes().len(), 24);
        assert_eq!(view.to_vec::<f32>().unwrap(), data.to_vec());
        let wrong = TensorView::new(&[4, 2], &data).unwrap_err();
        assert_eq!(wrong.status(), Status::InvalidArgument);
        assert!(wrong.message().contains("holds 8 elements, the data has 6"), "{}", wrong);
        assert!(TensorView::new(&[-1, 6], &data).is_err());
    }

    #[test]
    fn typed_access_checks_the_dtype() {
        let data = [7i32, 8];
        let view = TensorView::new(&[2], &data).unwrap();
        let e = view.as_slice::<f32>().unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(e.message().contains("int32, not float32"), "{}", e);
        assert_eq!(view.as_slice::<i32>().unwrap(), &[7, 8]);
    }

    #[test]
    fn raw_bytes_need_the_exact_size() {
        let bytes = [0u8; 6];
        assert!(TensorView::from_bytes(DType::F16, &[3], &bytes).is_ok());
        assert!(TensorView::from_bytes(DType::F16, &[4], &bytes).is_err());
    }

    #[test]
    fn aligned_buffers_copy_and_align() {
        let buffer = AlignedBuffer::copy_from(&[1, 2, 3]).unwrap();
        assert_eq!(buffer.as_mut_ptr() as usize % 64, 0);
        // SAFETY: three bytes were copied in.
        assert_eq!(unsafe { std::slice::from_raw_parts(buffer.as_mut_ptr(), 3) }, &[1, 2, 3]);
        AlignedBuffer::copy_from(&[]).unwrap();
    }
}
