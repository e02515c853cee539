"""SCADA alarm thresholds for the Harrow Vale distribution network."""

LOW_PRESSURE_BAR = 1.5  # below this at any district meter: low pressure alarm
HIGH_PRESSURE_BAR = 7.0  # above this: risk of bursts, raise a high pressure alarm
RESERVOIR_LOW_LEVEL_PCT = 25  # service reservoir below 25 percent of capacity
CHLORINE_MIN_MG_L = 0.2  # free chlorine below this at a sample tap


def pressure_alarm(bar: float) -> str | None:
    """The alarm a pressure reading raises, if any."""
    if bar < LOW_PRESSURE_BAR:
        return "SCADA-LP"
    if bar > HIGH_PRESSURE_BAR:
        return "SCADA-HP"
    return None
