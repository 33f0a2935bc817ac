//! Element types as DLPack describes them (code, bits, lanes), and the Rust
//! types that can be viewed as tensor elements.
use std::fmt;

use crate::sys;

/// A tensor's element type: DLPack's `DLDataType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DType {
    /// `DLDataTypeCode`: 0 int, 1 uint, 2 float, 4 bfloat, ...
    pub code: u8,
    /// Bits of one lane.
    pub bits: u8,
    /// Lanes of a vector type; 1 for scalars.
    pub lanes: u16,
}

impl DType {
    pub const I8: DType = DType::scalar(sys::DLDataTypeCode_kDLInt, 8);
    pub const I16: DType = DType::scalar(sys::DLDataTypeCode_kDLInt, 16);
    pub const I32: DType = DType::scalar(sys::DLDataTypeCode_kDLInt, 32);
    pub const I64: DType = DType::scalar(sys::DLDataTypeCode_kDLInt, 64);
    pub const U8: DType = DType::scalar(sys::DLDataTypeCode_kDLUInt, 8);
    pub const U16: DType = DType::scalar(sys::DLDataTypeCode_kDLUInt, 16);
    pub const U32: DType = DType::scalar(sys::DLDataTypeCode_kDLUInt, 32);
    pub const U64: DType = DType::scalar(sys::DLDataTypeCode_kDLUInt, 64);
    pub const F16: DType = DType::scalar(sys::DLDataTypeCode_kDLFloat, 16);
    pub const F32: DType = DType::scalar(sys::DLDataTypeCode_kDLFloat, 32);
    pub const F64: DType = DType::scalar(sys::DLDataTypeCode_kDLFloat, 64);
    pub const BF16: DType = DType::scalar(sys::DLDataTypeCode_kDLBfloat, 16);
    /// agate's bool: uint1 as DLPack 0.6 spells it, stored one byte per element.
    pub const BOOL: DType = DType::scalar(sys::DLDataTypeCode_kDLUInt, 1);

    const fn scalar(code: u32, bits: u8) -> DType {
        DType { code: code as u8, bits, lanes: 1 }
    }

    /// Bytes of one element (bool and other sub-byte types take whole bytes).
    pub fn element_bytes(self) -> usize {
        (self.bits as usize * self.lanes as usize + 7) / 8
    }

    pub(crate) fn from_dl(dl: sys::DLDataType) -> DType {
        DType { code: dl.code, bits: dl.bits, lanes: dl.lanes }
    }

    pub(crate) fn to_dl(self) -> sys::DLDataType {
        sys::DLDataType { code: self.code, bits: self.bits, lanes: self.lanes }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == DType::BOOL {
            return f.write_str("bool");
        }
        let kind = match self.code as u32 {
            sys::DLDataTypeCode_kDLInt => "int",
            sys::DLDataTypeCode_kDLUInt => "uint",
            sys::DLDataTypeCode_kDLFloat => "float",
            sys::DLDataTypeCode_kDLBfloat => "bfloat",
            _ => return write!(f, "dtype(code={}, bits={}, lanes={})", self.code, self.bits, self.lanes),
        };
        write!(f, "{}{}", kind, self.bits)?;
        if self.lanes != 1 {
            write!(f, "x{}", self.lanes)?;
        }
        Ok(())
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A Rust type whose values are tensor elements of [`Element::DTYPE`]: plain
/// numbers, so any bit pattern of the right size and alignment is a valid value.
/// Sealed: implemented for the integer and floating-point primitives only.
pub trait Element: Copy + sealed::Sealed + 'static {
    const DTYPE: DType;
}

macro_rules! element {
    ($($t:ty => $d:expr),* $(,)?) => {
        $(impl sealed::Sealed for $t {}
          impl Element for $t { const DTYPE: DType = $d; })*
    };
}

element!(i8 => DType::I8, i16 => DType::I16, i32 => DType::I32, i64 => DType::I64,
         u8 => DType::U8, u16 => DType::U16, u32 => DType::U32, u64 => DType::U64,
         f32 => DType::F32, f64 => DType::F64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_sizes() {
        assert_eq!(DType::F32.to_string(), "float32");
        assert_eq!(DType::I64.to_string(), "int64");
        assert_eq!(DType::BOOL.to_string(), "bool");
        assert_eq!(DType::BOOL.element_bytes(), 1);
        assert_eq!(DType::BF16.element_bytes(), 2);
        assert_eq!(DType { lanes: 4, ..DType::F32 }.to_string(), "float32x4");
        assert_eq!(DType { lanes: 4, ..DType::F32 }.element_bytes(), 16);
    }
}
