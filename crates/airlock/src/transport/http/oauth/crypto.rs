//! The signature checks of access tokens: `jsonwebtoken`'s verifier interface on ring.
//!
//! `jsonwebtoken` parses and validates, and asks a process-wide provider for the signature
//! check. Its own providers are aws-lc-rs (cmake, a C toolchain) or RustCrypto (the `rsa`
//! crate, RUSTSEC-2023-0071); ring is already here as rustls' provider. This provider only
//! verifies, and only the asymmetric algorithms airlock accepts, each with the one key shape
//! it needs: an RSA key (modulus and exponent, 2048 to 8192 bits, as ring enforces) for the
//! RS and PS algorithms, an uncompressed P-256 or P-384 point for ES256 and ES384. HMAC,
//! EdDSA and signing are refused, so a token signed with HS256 and the RSA public key as its
//! secret can never verify (the algorithm-confusion attack): there is no HMAC here at all.
//! Trusts nothing it is given; holds no secret (public keys only).

use jsonwebtoken::crypto::{CryptoProvider, JwtSigner, JwtVerifier, KeyUtils};
use jsonwebtoken::errors::{Error, ErrorKind, Result};
use jsonwebtoken::jwk::{EllipticCurve, ThumbprintHash};
use jsonwebtoken::signature::{self, Verifier};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, DecodingKeyKind, EncodingKey};
use ring::signature::{self as ring_signature, RsaPublicKeyComponents, UnparsedPublicKey};

/// The provider: verification on ring, nothing else.
pub(super) static PROVIDER: CryptoProvider = CryptoProvider {
    signer_factory: no_signer,
    verifier_factory: verifier,
    key_utils: KeyUtils {
        rsa_pub_components_from_private_key: no_components,
        rsa_pub_components_from_public_key: no_components,
        ec_pub_components_from_private_key: no_ec_components,
        ed_pub_components_from_private_key: no_ed_components,
        compute_digest: no_digest,
    },
};

/// Installs [`PROVIDER`] as `jsonwebtoken`'s process-wide provider, unless the program
/// installed one of its own before (then that one verifies; the algorithms and key shapes
/// accepted are still decided by `oauth`'s validation, which allows no HMAC).
pub(super) fn install() {
    if let Err(other) = PROVIDER.install_default()
        && !std::ptr::eq(other, &PROVIDER)
    {
        tracing::info!("jsonwebtoken already has a crypto provider; airlock's is not installed");
    }
}

/// The verifier of `algorithm` with `key`, when the key has the shape the algorithm needs.
fn verifier(algorithm: &Algorithm, key: &DecodingKey) -> Result<Box<dyn JwtVerifier>> {
    use ring_signature as r;
    let rsa = |scheme: &'static r::RsaParameters| -> Result<Box<dyn JwtVerifier>> {
        match (key.family(), key.kind()) {
            (AlgorithmFamily::Rsa, DecodingKeyKind::RsaModulusExponent { n, e }) => {
                Ok(Box::new(Rsa {
                    algorithm: *algorithm,
                    scheme,
                    n: n.clone(),
                    e: e.clone(),
                }))
            }
            _ => Err(ErrorKind::InvalidKeyFormat.into()),
        }
    };
    let ec = |scheme: &'static r::EcdsaVerificationAlgorithm,
              point: usize|
     -> Result<Box<dyn JwtVerifier>> {
        match (key.family(), key.kind()) {
            (AlgorithmFamily::Ec, DecodingKeyKind::SecretOrDer(bytes))
                if bytes.len() == point && bytes.first() == Some(&4) =>
            {
                Ok(Box::new(Ec {
                    algorithm: *algorithm,
                    scheme,
                    point: bytes.clone(),
                }))
            }
            _ => Err(ErrorKind::InvalidKeyFormat.into()),
        }
    };
    match algorithm {
        Algorithm::RS256 => rsa(&r::RSA_PKCS1_2048_8192_SHA256),
        Algorithm::RS384 => rsa(&r::RSA_PKCS1_2048_8192_SHA384),
        Algorithm::RS512 => rsa(&r::RSA_PKCS1_2048_8192_SHA512),
        Algorithm::PS256 => rsa(&r::RSA_PSS_2048_8192_SHA256),
        Algorithm::PS384 => rsa(&r::RSA_PSS_2048_8192_SHA384),
        Algorithm::PS512 => rsa(&r::RSA_PSS_2048_8192_SHA512),
        Algorithm::ES256 => ec(&r::ECDSA_P256_SHA256_FIXED, P256_POINT_BYTES),
        Algorithm::ES384 => ec(&r::ECDSA_P384_SHA384_FIXED, P384_POINT_BYTES),
        // HMAC and EdDSA, and whatever a later version adds: never.
        _ => Err(ErrorKind::InvalidAlgorithm.into()),
    }
}

/// An uncompressed P-256 point: `04 || x || y`.
const P256_POINT_BYTES: usize = 65;
/// An uncompressed P-384 point.
const P384_POINT_BYTES: usize = 97;

/// An RSA public key and the scheme (padding and hash) of one algorithm.
struct Rsa {
    algorithm: Algorithm,
    scheme: &'static ring_signature::RsaParameters,
    n: Vec<u8>,
    e: Vec<u8>,
}

impl Verifier<Vec<u8>> for Rsa {
    fn verify(&self, message: &[u8], signature: &Vec<u8>) -> signature::Result<()> {
        RsaPublicKeyComponents {
            n: &self.n,
            e: &self.e,
        }
        .verify(self.scheme, message, signature)
        .map_err(|_| signature::Error::new())
    }
}

impl JwtVerifier for Rsa {
    fn algorithm(&self) -> Algorithm {
        self.algorithm
    }
}

/// An EC public point and the curve's ECDSA scheme (fixed-length `r || s` signatures, as JWS
/// has them).
struct Ec {
    algorithm: Algorithm,
    scheme: &'static ring_signature::EcdsaVerificationAlgorithm,
    point: Vec<u8>,
}

impl Verifier<Vec<u8>> for Ec {
    fn verify(&self, message: &[u8], signature: &Vec<u8>) -> signature::Result<()> {
        UnparsedPublicKey::new(self.scheme, &self.point)
            .verify(message, signature)
            .map_err(|_| signature::Error::new())
    }
}

impl JwtVerifier for Ec {
    fn algorithm(&self) -> Algorithm {
        self.algorithm
    }
}

fn no_signer(_: &Algorithm, _: &EncodingKey) -> Result<Box<dyn JwtSigner>> {
    Err(unsupported())
}

fn no_components(_: &[u8]) -> Result<(Vec<u8>, Vec<u8>)> {
    Err(unsupported())
}

fn no_ec_components(_: &[u8], _: Algorithm) -> Result<(EllipticCurve, Vec<u8>, Vec<u8>)> {
    Err(unsupported())
}

fn no_ed_components(_: &[u8], _: &EllipticCurve) -> Result<Vec<u8>> {
    Err(unsupported())
}

fn no_digest(_: &[u8], _: ThumbprintHash) -> Result<Vec<u8>> {
    Err(unsupported())
}

fn unsupported() -> Error {
    ErrorKind::UnsupportedAlgorithm.into()
}
