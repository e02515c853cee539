"""Frequent function words per language: the evidence of the language detector.

Short, high-frequency lists (about 50 words each) work because function words make up
a third of running text in these languages; words shared by several languages simply
add to each of them and the detector decides by margin.
"""

from __future__ import annotations

__all__ = ["STOPWORDS"]


def _w(words: str) -> frozenset[str]:
    return frozenset(words.split())


STOPWORDS: dict[str, frozenset[str]] = {
    "en": _w(
        "the of and to in is that for it as was with be by on not he this are or his from "
        "at which but have an they you were their one all we can has been there more if "
        "will would what when who its also these than into only other should may such our "
        "per up off out about after over any each how your do does did so no my me them "
        "then here just must every"
    ),
    "de": _w(
        "der die und in den von zu das mit sich des auf für ist im dem nicht ein eine als "
        "auch es an werden aus er hat dass sie nach wird bei einer um am sind noch wie "
        "einem über einen so zum war haben nur oder aber vor zur bis mehr durch kann"
    ),
    "fr": _w(
        "le la les de des et est un une du en que qui dans pour pas sur au par plus ce "
        "il elle sont avec ne se aux son sa ses mais ou comme nous vous leur été être "
        "cette ces fait peut entre aussi dont tout très sans"
    ),
    "es": _w(
        "el la los las de del y en que es un una por con para no se su sus al lo como "
        "más pero fue ha son está esta este entre cuando muy sin sobre también hasta "
        "donde desde todo nos durante uno ni contra ese eso había ser"
    ),
    "it": _w(
        "il lo la gli le di del della dei delle e è un una per con non che in da al alla "
        "sono si come ma più anche questo questa nel nella sul sulla ha hanno essere "
        "tra fra se quando molto dove perché loro suo sua era stato"
    ),
    "pt": _w(
        "o a os as de do da dos das e é um uma para com não que em no na por mais se "
        "como mas foi ao aos pela pelo são está esta este seu sua ou quando muito também "
        "já entre até isso ela ele nos ser tem há"
    ),
    "nl": _w(
        "de het een en van in is dat op te zijn met voor niet aan er om ook als bij door "
        "maar dan wordt naar nog uit worden dit die kan hij ze zich was werd over tot "
        "meer wel geen onder heeft hebben deze of"
    ),
    "sv": _w(
        "och att det som en på är av för med till den har de inte om ett var jag men "
        "från vid så kan när hade eller också efter under skulle där vara sig mot "
        "andra alla hur nu denna dessa detta mycket bara ska"
    ),
    "da": _w(
        "og i at det er en til på som de med han af for ikke der var den har jeg et "
        "men om fra ved kan skal eller også efter når være havde mod hvor dette disse "
        "meget kun hvad blev blive over sig"
    ),
    "no": _w(
        "og i det er som en til på av for med at har ikke den de var jeg et men om fra "
        "ved kan skal eller også etter når være hadde mot hvor dette disse mye bare "
        "hva ble bli over seg ikkje eg"
    ),
    "pl": _w(
        "i w na z się nie do to że jest o jak ale po co tak za od przez jego już tylko "
        "czy być może są był była było ich które który która oraz lub także dla przy "
        "bardzo jednak aby gdy"
    ),
    "fi": _w(
        "ja on ei se että oli hän ovat kun niin mutta tai myös ole olla jos kuin sen "
        "joka mitä vain tämä nämä ne siitä sitä hänen voi kanssa mukaan sekä koska "
        "jotka jo vielä olisi ollut"
    ),
    "tr": _w(
        "ve bir bu da de için ile olarak çok daha ne gibi ama en mi ya kadar sonra "
        "olan var her şey değil ise veya ki bu da ancak göre önce diye nasıl şu"
    ),
    "cs": _w(
        "a v se na je že to s z o do k jako ale by jsou pro které který která tak jeho "
        "už jen byl bylo byla být nebo po při také podle mezi když však velmi"
    ),
    "ru": _w(
        "и в не на что с по как это он к из у за от то но она для так его же все бы "
        "был было была были они мы вы при или уже только также если когда где этот "
        "быть может"
    ),
    "uk": _w(
        "і в не на що з по як це він до із у за від та але вона для так його же всі б "
        "був було була були вони ми ви при або вже тільки також якщо коли де цей бути "
        "може й"
    ),
}
