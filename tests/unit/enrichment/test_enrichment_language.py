"""The stopword/script language detector."""
# ruff: noqa: E501  (one sample sentence per language reads best on one line)

from __future__ import annotations

import pytest

from ragline.enrichment import detect_language

SAMPLES = {
    "en": "The service restarts when the error rate is higher than the limit for this tenant.",
    "de": "Der Dienst wird neu gestartet, wenn die Fehlerrate über dem Grenzwert für den Mandanten liegt.",
    "fr": "Le service redémarre quand le taux d'erreur est plus élevé que la limite pour ce client.",
    "es": "El servicio se reinicia cuando la tasa de errores es más alta que el límite para este cliente.",
    "it": "Il servizio si riavvia quando il tasso di errori è più alto del limite per questo cliente.",
    "pt": "O serviço reinicia quando a taxa de erros é mais alta que o limite para este cliente.",
    "nl": "De dienst wordt opnieuw gestart als het aantal fouten hoger is dan de limiet voor deze klant.",
    "sv": "Tjänsten startas om när felfrekvensen är högre än gränsen för den här kunden och det är bra.",
    "pl": "Usługa jest restartowana, gdy liczba błędów jest wyższa niż limit dla tego klienta i nie tylko.",
    "fi": "Palvelu käynnistyy uudelleen, kun virheiden määrä on suurempi kuin raja ja se ei ole hyvä.",
    "ru": "Сервис перезапускается, когда частота ошибок выше, чем предел для этого клиента.",
    "uk": "Сервіс перезапускається, коли частота помилок вища, ніж ліміт для цього клієнта.",
    "ja": "エラー率が上限を超えると、サービスは再起動します。",
    "zh": "当错误率高于该租户的限制时，服务会重新启动。",
    "ko": "오류율이 한도를 초과하면 서비스가 다시 시작됩니다.",
    "el": "Η υπηρεσία επανεκκινείται όταν το ποσοστό σφαλμάτων είναι υψηλό.",
    "ar": "تتم إعادة تشغيل الخدمة عندما يكون معدل الأخطاء أعلى من الحد.",
}


@pytest.mark.parametrize(("lang", "text"), sorted(SAMPLES.items()))
def test_detects_the_language(lang: str, text: str) -> None:
    assert detect_language(text) == lang


@pytest.mark.parametrize(
    "text",
    ["", "Hello", "| 12 | 34 | 56 |", "x = compute(y) + 1", "E1234 E2001 HTTP 503", "12.5 GiB"],
)
def test_thin_evidence_is_undetermined(text: str) -> None:
    assert detect_language(text) == "und"
