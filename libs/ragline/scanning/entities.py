"""The PII entity catalog: which entities exist, how they are found, and their groups.

Policies name entities or groups; the detectors need to know whether an entity is a
pattern (cheap, always affordable) or an NER label (spaCy, only run when a policy asks).
Presidio ships many more recognizers; the ones left out here are either too noisy on
technical text without a context word (vehicle plates, postcodes, driver licences,
health-plan ids: hundreds of hits on 500 SciFact abstracts) or pathologically slow on
long texts (``IN_PAN``: 42 KB/s). A policy file can not enable them by accident: unknown
entity names are configuration errors.
"""

from __future__ import annotations

from types import MappingProxyType

__all__ = [
    "ALL_ENTITIES",
    "GROUPS",
    "NER_ENTITIES",
    "NER_LABELS",
    "PATTERN_RECOGNIZERS",
    "expand",
]

# entity -> presidio predefined recognizer class name
PATTERN_RECOGNIZERS: MappingProxyType[str, str] = MappingProxyType(
    {
        "EMAIL_ADDRESS": "EmailRecognizer",
        "PHONE_NUMBER": "PhoneRecognizer",
        "CREDIT_CARD": "CreditCardRecognizer",
        "IBAN_CODE": "IbanRecognizer",
        "US_BANK_NUMBER": "UsBankRecognizer",
        "IP_ADDRESS": "IpRecognizer",
        "US_SSN": "UsSsnRecognizer",
        "US_ITIN": "UsItinRecognizer",
        "US_PASSPORT": "UsPassportRecognizer",
        "UK_NHS": "NhsRecognizer",
        "UK_NINO": "UkNinoRecognizer",
        "CA_SIN": "CaSinRecognizer",
        "ES_NIF": "EsNifRecognizer",
        "ES_NIE": "EsNieRecognizer",
        "IT_FISCAL_CODE": "ItFiscalCodeRecognizer",
        "PL_PESEL": "PlPeselRecognizer",
        "DE_TAX_ID": "DeTaxIdRecognizer",
        "FI_PERSONAL_IDENTITY_CODE": "FiPersonalIdentityCodeRecognizer",
        "SE_PERSONNUMMER": "SePersonnummerRecognizer",
        "SG_NRIC_FIN": "SgFinRecognizer",
        "AU_TFN": "AuTfnRecognizer",
        "AU_MEDICARE": "AuMedicareRecognizer",
        "IN_AADHAAR": "InAadhaarRecognizer",
        "KR_RRN": "KrRrnRecognizer",
        "TR_NATIONAL_ID": "TrNationalIdRecognizer",
        "ZA_ID_NUMBER": "ZaIdNumberRecognizer",
        "NG_NIN": "NgNinRecognizer",
        "TH_TNIN": "ThTninRecognizer",
    }
)

# entity -> spaCy labels (presidio's own mapping)
NER_LABELS: MappingProxyType[str, tuple[str, ...]] = MappingProxyType(
    {
        "PERSON": ("PERSON",),
        "LOCATION": ("GPE", "LOC", "FAC"),
        "NRP": ("NORP",),
    }
)
NER_ENTITIES = tuple(NER_LABELS)
ALL_ENTITIES = tuple(PATTERN_RECOGNIZERS) + NER_ENTITIES

_NATIONAL = tuple(
    e
    for e in PATTERN_RECOGNIZERS
    if e
    not in {"EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "IBAN_CODE", "US_BANK_NUMBER",
            "IP_ADDRESS"}
)  # fmt: skip

GROUPS: MappingProxyType[str, tuple[str, ...]] = MappingProxyType(
    {
        "contact": ("EMAIL_ADDRESS", "PHONE_NUMBER"),
        "financial": ("CREDIT_CARD", "IBAN_CODE", "US_BANK_NUMBER"),
        "national_id": _NATIONAL,
        "network": ("IP_ADDRESS",),
        "names": ("PERSON",),
        "places": ("LOCATION", "NRP"),
    }
)


def expand(key: str) -> tuple[str, ...]:
    """Entities named by a policy key: ``*``, a group name or one entity; ``()`` if unknown."""
    if key == "*":
        return ALL_ENTITIES
    if key in GROUPS:
        return GROUPS[key]
    if key in ALL_ENTITIES:
        return (key,)
    return ()
